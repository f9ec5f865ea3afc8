package actionflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// submitLimited submits a call to exec (empty: a new execution with limit).
func (f fixture) submitLimited(t *testing.T, exec ids.ExecutionID, limit int, tool string, n int) actionflow.Action {
	t.Helper()
	a, _, err := f.svc.Submit(context.Background(), actionflow.SubmitRequest{SessionID: "ses_1", ExecutionID: exec, ToolCallID: ids.ToolCallID(fmt.Sprintf("call_%d", n)),
		Tool: tool, Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), Interactive: true, IterationLimit: limit,
		Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestIterationLimitCountsEachCallOnce(t *testing.T) {
	cases := []struct {
		name  string
		limit int
		tools []string // the calls, in order; the last one exceeds the limit
	}{
		{"limit 1: the second call is refused", 1, []string{"noop", "noop"}},
		{"a denied call is an iteration too", 2, []string{"forbidden", "noop", "noop"}},
		{"an asked call is an iteration", 2, []string{"risky", "noop", "noop"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			var exec ids.ExecutionID
			for i, tool := range tc.tools {
				a := f.submitLimited(t, exec, tc.limit, tool, i)
				exec = a.ExecutionID
				d, err := f.svc.Authorize(ctx, in(a))
				if err != nil {
					t.Fatal(err)
				}
				// Authorizing the same action again counts nothing more,
				// also after a crash between counting and saving the
				// decision (the decision is erased to stand for it).
				if _, err := f.svc.Authorize(ctx, in(a)); err != nil {
					t.Fatal(err)
				}
				if !last(i, tc.tools) {
					f.forgetDecision(t, a.ActionID)
					if _, err := f.svc.Authorize(ctx, in(a)); err != nil {
						t.Fatal(err)
					}
				}
				e, _ := f.svc.GetExecution(ctx, exec)
				last := last(i, tc.tools)
				switch {
				case !last && (len(e.Iterations) != i+1 || e.Status != actionflow.ExecRunning):
					t.Fatalf("call %d: %d iterations, %s", i, len(e.Iterations), e.Status)
				case last && (d.Permission != lifecycle.PermissionDeny || d.ReasonCode != actionflow.ReasonIterationLimit):
					t.Fatalf("call beyond the limit: %+v", d)
				case last && (e.Status != actionflow.ExecFailed || e.End == nil || e.End.Reason != actionflow.ReasonIterationLimit || len(e.Iterations) != tc.limit):
					t.Fatalf("after the limit: %+v %+v", e, e.End)
				}
			}
		})
	}
}

func last(i int, calls []string) bool { return i == len(calls)-1 }

// forgetDecision erases an action's decision, as if authorization had
// crashed after counting the iteration and before saving the decision.
func (f fixture) forgetDecision(t *testing.T, id ids.ActionID) {
	t.Helper()
	ctx := context.Background()
	it, err := f.st.Get(ctx, store.Key{PK: "ACTION#" + string(id), SK: "META"})
	if err != nil {
		t.Fatal(err)
	}
	js, err := actionflow.ActionJSON(it.Body)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(js, &body); err != nil {
		t.Fatal(err)
	}
	delete(body, "decision")
	body["states"].(map[string]any)["permission"] = ""
	if it.Body, err = json.Marshal(body); err != nil {
		t.Fatal(err)
	}
	prev := it.Version
	it.Version++
	if err := f.st.CompareAndSwap(ctx, it, prev, 0); err != nil {
		t.Fatal(err)
	}
}

// Parallel calls cannot together exceed the limit: exactly limit of them
// are counted, the rest refused.
func TestIterationLimitUnderParallelCalls(t *testing.T) {
	const limit, calls = 3, 16
	for round := 0; round < 5; round++ {
		parallelRound(t, newFixture(t), limit, calls)
	}
}

func parallelRound(t *testing.T, f fixture, limit, calls int) {
	ctx := context.Background()
	first := f.submitLimited(t, "", limit, "noop", 0)
	actions := []actionflow.Action{first}
	for i := 1; i < calls; i++ {
		actions = append(actions, f.submitLimited(t, first.ExecutionID, 0, "noop", i))
	}
	var wg sync.WaitGroup
	out := make([]actionflow.AuthorizeOutput, calls)
	errs := make([]error, calls)
	for i, a := range actions {
		wg.Add(1)
		go func(i int, a actionflow.Action) {
			defer wg.Done()
			out[i], errs[i] = f.svc.Authorize(ctx, in(a))
		}(i, a)
	}
	wg.Wait()
	allowed := 0
	for i := range out {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if out[i].Permission == lifecycle.PermissionAllow {
			allowed++
		}
	}
	e, _ := f.svc.GetExecution(ctx, first.ExecutionID)
	if allowed != limit || len(e.Iterations) != limit || e.Status != actionflow.ExecFailed {
		t.Fatalf("%d allowed, %d counted, %s", allowed, len(e.Iterations), e.Status)
	}
}
