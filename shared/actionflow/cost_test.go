package actionflow_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// engineDecider records a decider's own record with each decision, as the
// permission engine's decider does.
type engineDecider struct{ ruleDecider }

const engineRecord = `{"policy_digest":"sha256:aaaa","context_digest":"sha256:bbbb"}`

func (d engineDecider) Decide(ctx context.Context, a actionflow.Action) (actionflow.Decision, error) {
	dec, err := d.ruleDecider.Decide(ctx, a)
	dec.Engine = json.RawMessage(engineRecord)
	return dec, err
}

// The decider's record stays on the action (revalidation compares it) and
// out of the action.decided event, which carries what the API's action view
// shows: it would double the event's size, hence its write units.
func TestDecidedEventLeavesTheDecidersRecordOnTheAction(t *testing.T) {
	f := newFixture(t, func(c *actionflow.Config) { c.Decider = engineDecider{c.Decider.(ruleDecider)} })
	ctx := context.Background()
	tests := []struct{ name, tool string }{{"allow", "noop"}, {"ask", "risky"}, {"deny", "forbidden"}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.submit(t, tc.tool, `{}`)
			if _, err := f.svc.Authorize(ctx, actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID, Mode: "initial"}); err != nil {
				t.Fatal(err)
			}
			stored, err := f.svc.GetAction(ctx, a.ActionID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Decision == nil || string(stored.Decision.Engine) != engineRecord {
				t.Fatalf("stored decision %+v: want the decider's record %s", stored.Decision, engineRecord)
			}
			evs, err := f.svc.ReadEvents(ctx, a.SessionID, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, ev := range evs {
				if ev.Type != "action.decided" || ev.ActionID != a.ActionID {
					continue
				}
				found = true
				var data struct {
					Decision map[string]json.RawMessage `json:"decision"`
				}
				if err := json.Unmarshal(ev.Data, &data); err != nil {
					t.Fatal(err)
				}
				if _, ok := data.Decision["engine"]; ok {
					t.Errorf("the event carries the decider's record: %s", ev.Data)
				}
				if string(data.Decision["permission"]) == "" || string(data.Decision["reason"]) == "" {
					t.Errorf("the event lost the decision itself: %s", ev.Data)
				}
			}
			if !found {
				t.Fatal("no action.decided event")
			}
		})
	}
}

// A decided action's item, as the permission engine's decider leaves it
// (its record repeats ids, digests and the reason), stays under 1 KB with
// its keys: DynamoDB bills each started KB of it on every write, double in
// a transaction, and again in each index.
func TestDecidedActionFitsOneWriteUnit(t *testing.T) {
	realistic := `{"action_id":"act_01m8s8e2t3s3x4j7q13323gbxy","session_id":"ses_bench","tool":"Bash","permission":"allow",` +
		`"reason":{"source":"allow_rule","code":"allow_rule","rule":"Bash(git *)","detail":"allowed by Bash(git *)"},"policy_version":"v1",` +
		`"policy_digest":"sha256:9951ccfb202a8bcf30e51deef0a84eed26358f834a6509fee85c930af7229d25",` +
		`"context_digest":"sha256:7a2069de46883abdd8f54a0952048222318ecbc274082bddd418cf5f27d8a050",` +
		`"args_digest":"sha256:e9f74e715a1806aa651489dcf176e77013b3c851dbc114cc9c24f2fe9d411d65"}`
	f := newFixture(t, func(c *actionflow.Config) {
		c.Decider = realisticDecider{c.Decider.(ruleDecider), realistic}
		c.Router = routes{"Bash": "test"}
	})
	ctx := context.Background()
	a := f.submit(t, "Bash", `{"command":"git status --short && git log --oneline -5","description":"Show the working tree status"}`)
	if _, err := f.svc.Authorize(ctx, actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID, Mode: "initial"}); err != nil {
		t.Fatal(err)
	}
	// Decided, then dispatched (start evidence and a short result).
	for _, step := range []string{"decided", "dispatched"} {
		if step == "dispatched" {
			if _, err := f.svc.Dispatch(ctx, actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID, Mode: "sync"}); err != nil {
				t.Fatal(err)
			}
		}
		itemFits(t, f, a.ActionID, step)
	}
	got, err := f.svc.GetAction(ctx, a.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Decision.Engine) != realistic || got.Tool != "Bash" || got.Result == nil {
		t.Errorf("read back %+v", got)
	}
}

func itemFits(t *testing.T, f fixture, id ids.ActionID, step string) {
	t.Helper()
	it, err := f.st.Get(context.Background(), store.Key{PK: "ACTION#" + string(id), SK: "META"})
	if err != nil {
		t.Fatal(err)
	}
	size := len("pk") + len(it.PK) + len("sk") + len(it.SK) + len("body") + len(it.Body) + len("version") + 8 +
		len("gsi1pk") + len(it.GSI1PK) + len("gsi1sk") + len(it.GSI1SK) + len("gsi2pk") + len(it.GSI2PK) + len("gsi2sk") + len(it.GSI2SK)
	js, err := actionflow.ActionJSON(it.Body)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s action item: %d bytes (body %d, JSON %d)", step, size, len(it.Body), len(js))
	if size > 1024 {
		t.Errorf("the %s action's item is %d bytes (body %d, %d as JSON): over one write unit", step, size, len(it.Body), len(js))
	}
}

type realisticDecider struct {
	ruleDecider
	engine string
}

func (d realisticDecider) Decide(ctx context.Context, a actionflow.Action) (actionflow.Decision, error) {
	dec := actionflow.Decision{Permission: "allow", PolicyVersion: "v1", Reason: actionflow.Reason{Source: "allow_rule", Code: "allow_rule", Rule: "Bash(git *)", Detail: "allowed by Bash(git *)"}}
	dec.Engine = json.RawMessage(d.engine)
	return dec, nil
}

// An action item written as plain JSON (before bodies were compressed, or
// under the threshold) reads back and can be updated.
func TestPlainJSONActionBodyStillReads(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.submit(t, "noop", `{"x":1}`)
	if _, err := f.svc.Authorize(ctx, actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID, Mode: "initial"}); err != nil {
		t.Fatal(err)
	}
	key := store.Key{PK: "ACTION#" + string(a.ActionID), SK: "META"}
	it, err := f.st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	js, err := actionflow.ActionJSON(it.Body)
	if err != nil {
		t.Fatal(err)
	}
	old := it
	old.Body, old.Version = js, it.Version+1
	if err := f.st.CompareAndSwap(ctx, old, it.Version, 0); err != nil {
		t.Fatal(err)
	}
	got, err := f.svc.GetAction(ctx, a.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	if got.States.Permission != "allow" || got.Decision == nil {
		t.Fatalf("read back %+v", got)
	}
	if out, err := f.svc.Dispatch(ctx, actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID, Mode: "sync"}); err != nil || out.Outcome != "succeeded" {
		t.Fatalf("dispatch after a plain body: %+v %v", out, err)
	}
}
