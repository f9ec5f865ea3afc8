package flowtest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
)

// TestGraphMatchesTheStateMachine keeps the engine double honest: from
// every state it walks (Task, Pass, terminal), the states it can reach
// next, seen through Choice states, are exactly those of the ASL file.
func TestGraphMatchesTheStateMachine(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(here), "../../../statemachines/action-lifecycle.asl.json"))
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		States map[string]struct {
			Type    string
			Next    string
			Default string
			Choices []struct{ Next string }
			Catch   []struct{ Next string }
		}
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	var through func(name string, out map[string]bool)
	through = func(name string, out map[string]bool) {
		st := def.States[name]
		if st.Type != "Choice" {
			out[name] = true
			return
		}
		for _, c := range st.Choices {
			through(c.Next, out)
		}
		through(st.Default, out)
	}
	walked := 0
	for name, st := range def.States {
		if st.Type == "Choice" {
			continue
		}
		walked++
		next := map[string]bool{}
		if st.Next != "" {
			through(st.Next, next)
		}
		for _, c := range st.Catch {
			through(c.Next, next)
		}
		var got []string
		for n := range next {
			got = append(got, n)
		}
		want, ok := flowtest.Graph[name]
		if !ok {
			t.Errorf("state %s of the ASL file is missing from the engine double", name)
			continue
		}
		slices.Sort(got)
		want = slices.Clone(want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("state %s: ASL goes to %v, the engine double to %v", name, got, want)
		}
	}
	if walked != len(flowtest.Graph) {
		t.Errorf("the engine double has %d states, the ASL file %d (without Choice states)", len(flowtest.Graph), walked)
	}
}

func TestEngineRunsTheLifecycle(t *testing.T) {
	cases := []struct {
		tool    string
		decide  string
		want    string // outcome
		state   string // final state
		runHost bool
	}{
		{flowtest.ToolWrite, "", "succeeded", "RecordOutcome", false},
		{flowtest.ToolForbidden, "", "not_started", "RecordOutcome", false},
		{flowtest.ToolBlocked, "", "not_started", "RecordOutcome", false},
		{flowtest.ToolAsk, "approve", "succeeded", "RecordOutcome", false},
		{flowtest.ToolAsk, "decline", "not_started", "RecordOutcome", false},
		{flowtest.ToolHost, "", "succeeded", "RecordOutcome", true},
		{flowtest.ToolAskHost, "approve", "succeeded", "RecordOutcome", true},
	}
	for _, tc := range cases {
		t.Run(tc.tool+"_"+tc.decide, func(t *testing.T) {
			ctx := t.Context()
			w := flowtest.NewWorld(t)
			p := w.Start(t)
			a, err := p.Submit(ctx, "ses_1", "", tc.tool, `{"x":1}`)
			if err != nil {
				t.Fatal(err)
			}
			for range 4 {
				if err := p.Engine.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				if tc.decide != "" {
					if _, err := p.DecidePending(ctx, "ses_1", tc.decide); err != nil {
						t.Fatal(err)
					}
				}
				if tc.runHost {
					if _, err := p.RunHostTasks(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, _ := p.Flow.GetAction(ctx, a.ActionID)
			st, _ := p.Engine.State(ctx, a.ActionID)
			if string(got.States.Outcome) != tc.want || st != tc.state || got.States.Delivery != "projected" {
				t.Fatalf("outcome %s delivery %s state %s", got.States.Outcome, got.States.Delivery, st)
			}
		})
	}
}
