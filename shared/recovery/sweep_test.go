package recovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/recovery"
	"github.com/openprogram/lifecycle/shared/store"
)

const session = ids.SessionID("ses_1")

type fixture struct {
	w      *flowtest.World
	faulty *flowtest.FaultyStore
	p      *flowtest.Process
	ctl    *control.Service
	sw     *recovery.Sweeper
}

func newFixture(t *testing.T, opts ...func(*recovery.Config)) *fixture {
	t.Helper()
	f := &fixture{w: flowtest.NewWorld(t)}
	f.w.Wrap = func(s store.Store) store.Store {
		f.faulty = &flowtest.FaultyStore{Store: s}
		return f.faulty
	}
	f.start(t, opts...)
	return f
}

// start builds a new process over the same store (a restart).
func (f *fixture) start(t *testing.T, opts ...func(*recovery.Config)) {
	t.Helper()
	f.p = f.w.Start(t)
	var err error
	if f.ctl, err = control.New(control.Config{Flow: f.p.Flow, Logger: f.w.Log}); err != nil {
		t.Fatal(err)
	}
	cfg := recovery.Config{Flow: f.p.Flow, Control: f.ctl, Machines: f.p.Engine, Logger: f.w.Log}
	for _, o := range opts {
		o(&cfg)
	}
	if f.sw, err = recovery.New(cfg); err != nil {
		t.Fatal(err)
	}
}

// failing fails writes whose key contains every one of parts (and whose
// body contains body, when set).
func failing(op string, body string, parts ...string) func(string, store.Item) bool {
	return func(o string, it store.Item) bool {
		if op != "" && o != op {
			return false
		}
		k := it.Key().String()
		for _, p := range parts {
			if !strings.Contains(k, p) {
				return false
			}
		}
		if body == "" {
			return true
		}
		js, err := actionflow.ActionJSON(it.Body) // an action's body may be stored compressed
		return err == nil && strings.Contains(string(js), body)
	}
}

func (f *fixture) drain(t *testing.T) {
	t.Helper()
	if err := f.p.Engine.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) submit(t *testing.T, tool string) actionflow.Action {
	t.Helper()
	a, err := f.p.Submit(context.Background(), session, "", tool, `{"v":1}`)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// checkEventLog: the session's event sequence has no gaps and no duplicates.
func checkEventLog(t *testing.T, flow *actionflow.Service, s ids.SessionID) int {
	t.Helper()
	evs, err := flow.ReadEvents(context.Background(), s, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	return len(evs)
}

func TestSweepClassifiesFromDurableEvidence(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, f *fixture) ids.ActionID
		did   recovery.Did
		want  lifecycle.Outcome
		calls int // sync + host executor calls, in total
	}{
		{"receipt recorded, checkpoint missing: rebuilt from the receipt", func(t *testing.T, f *fixture) ids.ActionID {
			f.faulty.Set(failing("put", "", "/CKPT#"))
			a := f.submit(t, flowtest.ToolWrite)
			f.drain(t) // record: receipt sealed, every fold fails -> RuntimeFailure
			return a.ActionID
		}, recovery.Rebuilt, lifecycle.OutcomeSucceeded, 1},
		{"checkpoint recorded by an earlier revision, projection missing: projected only", func(t *testing.T, f *fixture) ids.ActionID {
			f.faulty.SetRewrite(flowtest.EarlierRecord)
			f.w.Bus.Fail(errors.New("its project step failed"))
			a := f.submit(t, flowtest.ToolWrite)
			f.drain(t) // left recorded; the machine failed
			return a.ActionID
		}, recovery.Projected, lifecycle.OutcomeSucceeded, 1},
		{"projected, publish failed, machine failed: the stored event published again", func(t *testing.T, f *fixture) ids.ActionID {
			f.w.Bus.Fail(errors.New("event bus unavailable"))
			a := f.submit(t, flowtest.ToolWrite)
			f.drain(t) // record: the transaction stands, every publish fails -> RuntimeFailure
			if got, _ := f.p.Flow.GetAction(context.Background(), a.ActionID); !got.States.Terminal() {
				t.Fatalf("set-up: states %+v", got.States)
			}
			return a.ActionID
		}, recovery.Projected, lifecycle.OutcomeSucceeded, 1},
		{"stored result, receipt write failed: the known result is sealed", func(t *testing.T, f *fixture) ids.ActionID {
			f.faulty.Set(failing("put", "", "/RECEIPT"))
			a := f.submit(t, flowtest.ToolWrite)
			f.drain(t)
			return a.ActionID
		}, recovery.Sealed, lifecycle.OutcomeSucceeded, 1},
		{"start evidence, no result, machine aborted: unknown, not re-dispatched", func(t *testing.T, f *fixture) ids.ActionID {
			ctx := context.Background()
			a := f.submit(t, flowtest.ToolHost)
			f.drain(t) // waiting for a host
			if _, err := f.p.Flow.HostStart(ctx, a.ActionID, "att_host"); err != nil {
				t.Fatal(err)
			}
			// The host dies before it runs the tool; the machine is stopped.
			if err := f.p.Engine.Stop(ctx, a.ActionID, "operator"); err != nil {
				t.Fatal(err)
			}
			return a.ActionID
		}, recovery.Sealed, lifecycle.OutcomeUnknown, 0},
		{"allowed, never dispatched, machine failed: not started", func(t *testing.T, f *fixture) ids.ActionID {
			ctx := context.Background()
			a := f.submit(t, flowtest.ToolWrite)
			if _, err := f.p.Flow.Authorize(ctx, actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID}); err != nil {
				t.Fatal(err)
			}
			if err := f.p.Engine.Fail(ctx, a.ActionID, "lost"); err != nil {
				t.Fatal(err)
			}
			return a.ActionID
		}, recovery.Sealed, lifecycle.OutcomeNotStarted, 0},
		{"machine never started: started", func(t *testing.T, f *fixture) ids.ActionID {
			f.faulty.Set(failing("put", "", "TESTSFN#"))
			a, _ := f.p.Submit(context.Background(), session, "", flowtest.ToolWrite, `{}`)
			return a.ActionID
		}, recovery.Started, lifecycle.OutcomeSucceeded, 1},
		{"approval decided, wait not completed: the decision is sent again", func(t *testing.T, f *fixture) ids.ActionID {
			a := f.submit(t, flowtest.ToolAsk)
			f.drain(t)
			f.faulty.Set(failing("cas", `"done"`, "TESTSFN#"))
			if _, err := f.p.DecidePending(context.Background(), session, "approve"); err == nil {
				t.Fatal("completing the wait should have failed")
			}
			return a.ActionID
		}, recovery.ResentDecision, lifecycle.OutcomeSucceeded, 1},
		{"host result stored, wait not completed: the result is sent again", func(t *testing.T, f *fixture) ids.ActionID {
			a := f.submit(t, flowtest.ToolHost)
			f.drain(t)
			f.faulty.Set(failing("cas", `"done"`, "TESTSFN#"))
			if _, err := f.p.RunHostTasks(context.Background()); err == nil {
				t.Fatal("completing the wait should have failed")
			}
			return a.ActionID
		}, recovery.ResentResult, lifecycle.OutcomeSucceeded, 1},
		{"approval pending, machine aborted: expired, not started", func(t *testing.T, f *fixture) ids.ActionID {
			a := f.submit(t, flowtest.ToolAsk)
			f.drain(t)
			if err := f.p.Engine.Stop(context.Background(), a.ActionID, "operator"); err != nil {
				t.Fatal(err)
			}
			return a.ActionID
		}, recovery.Sealed, lifecycle.OutcomeNotStarted, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			id := tc.setup(t, f)
			f.faulty.Set(nil)
			f.faulty.SetRewrite(nil)
			f.w.Bus.Fail(nil)
			published := len(f.w.Bus.Published("action.projected"))
			// A new process (restart) sweeps.
			f.start(t)
			rep, err := f.sw.SweepAction(ctx, id)
			if err != nil || rep.Did != tc.did {
				t.Fatalf("sweep: %+v %v, want %s", rep, err, tc.did)
			}
			f.drain(t) // a started or re-completed machine finishes
			a, _ := f.p.Flow.GetAction(ctx, id)
			rc, err := f.p.Flow.GetReceipt(ctx, id)
			if err != nil || rc.Outcome != tc.want || a.States.Outcome != tc.want || !a.States.Terminal() {
				t.Fatalf("receipt %+v (%v), states %+v; want %s", rc, err, a.States, tc.want)
			}
			if rc.Outcome == lifecycle.OutcomeUnknown && rc.Reconciliation == "" {
				t.Fatal("an unknown outcome without reconciliation guidance")
			}
			calls := f.w.Sync.Total() + f.w.Host.Total()
			if calls != tc.calls {
				t.Fatalf("executors called %d times, want %d", calls, tc.calls)
			}
			ck, _ := f.p.Flow.GetCheckpoint(ctx, a.ExecutionID)
			if ck.Recorded != 1 {
				t.Fatalf("checkpoint folded %d receipts, want 1", ck.Recorded)
			}
			// One projection stored, and published (again) after the repair.
			var stored []actionflow.Event
			evs, _ := f.p.Flow.ReadEvents(ctx, session, 0, 1000)
			for _, ev := range evs {
				if ev.Type == "action.projected" && ev.ActionID == id {
					stored = append(stored, ev)
				}
			}
			pub := f.w.Bus.Published("action.projected")
			if len(stored) != 1 || len(pub) <= published || pub[len(pub)-1].Seq != stored[0].Seq {
				t.Fatalf("action.projected stored %+v, published %+v", stored, pub)
			}
			// Sweeping again changes nothing.
			events := checkEventLog(t, f.p.Flow, session)
			again, err := f.sw.Sweep(ctx)
			if err != nil || again.Changed() != 0 {
				t.Fatalf("second sweep: %+v %v", again, err)
			}
			if n := checkEventLog(t, f.p.Flow, session); n != events {
				t.Fatalf("second sweep appended %d events", n-events)
			}
			if e, _ := f.p.Flow.GetExecution(ctx, a.ExecutionID); e.Status == actionflow.ExecCompleted {
				t.Fatal("recovery marked the task completed")
			}
		})
	}
}

// TestAnswerToAnEarlierWaitCannotResumeANewerOne: a decision of a wait
// that was superseded (its machine re-entered the wait) is not resent; the
// newer wait needs its own answer.
func TestAnswerToAnEarlierWaitCannotResumeANewerOne(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a := f.submit(t, flowtest.ToolAsk)
	f.drain(t)
	first, _ := f.p.Flow.GetApproval(ctx, a.ActionID)
	f.faulty.Set(failing("cas", `"done"`, "TESTSFN#"))
	f.p.DecidePending(ctx, session, "approve") // approved; completion lost
	f.faulty.Set(nil)
	// The approval step is invoked again (a newer wait replaces the first).
	if _, err := f.p.Flow.ApprovalStep(ctx, actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID, Mode: "await", TaskToken: "tok-newer"}); err != nil {
		t.Fatal(err)
	}
	rep, err := f.sw.SweepAction(ctx, a.ActionID)
	if err != nil || rep.Did != recovery.Left {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	if _, err := f.p.Flow.DecideApproval(ctx, first.ApprovalID, "approve", a.ArgsDigest, flowtest.Human(session)); err == nil {
		t.Fatal("the earlier wait's id decided the newer wait")
	}
	f.drain(t)
	if f.w.Sync.Total() != 0 {
		t.Fatal("dispatched on the earlier wait's answer")
	}
	cur, _ := f.p.Flow.GetApproval(ctx, a.ActionID)
	if cur.Status != actionflow.ApprovalPending || cur.ApprovalID == first.ApprovalID {
		t.Fatalf("newer wait %+v", cur)
	}
}

func TestSweepFinishesCommandsAndCancellations(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a := f.submit(t, flowtest.ToolHost)
	f.drain(t)
	task, err := f.p.Flow.HostStart(ctx, a.ActionID, "att_host")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := f.p.Flow.GetExecution(ctx, a.ExecutionID)
	// Another attempt owns the execution: the cancel is saved, not applied.
	o, _ := f.ctl.Acquire(ctx, e.ExecutionID, "att_other")
	r, err := f.ctl.Submit(ctx, e.ExecutionID, control.Command{ID: "cmd_c", Type: control.Cancel, ExpectedVersion: e.Version}, flowtest.Human(session))
	if err != nil || r.Status != control.StatusAccepted {
		t.Fatalf("%+v %v", r, err)
	}
	f.ctl.Release(ctx, o)
	rep, err := f.sw.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := f.p.Flow.GetExecution(ctx, e.ExecutionID)
	if got.Status != actionflow.ExecCancelling {
		t.Fatalf("after the sweep: %s (%+v)", got.Status, rep.Executions)
	}
	// The started host action finishes; the next sweep confirms the end.
	if err := f.p.Flow.HostResult(ctx, a.ActionID, "att_host", task.Fence, f.w.Host.Run(a.ActionID)); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	if _, err := f.sw.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = f.p.Flow.GetExecution(ctx, e.ExecutionID)
	rc, _ := f.p.Flow.GetReceipt(ctx, a.ActionID)
	if got.Status != actionflow.ExecCancelled || rc.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("execution %s, receipt %s", got.Status, rc.Outcome)
	}
	raw, _ := json.Marshal(got)
	if strings.Contains(string(raw), `"completed"`) {
		t.Fatal("cancellation marked something completed")
	}
}

// A crash between an execution's end (End applied, the iteration limit's
// admission write) and the closing of its unstarted actions leaves a
// pending approval nobody may answer: the sweep closes it as the end would
// have.
func TestSweepClosesUnstartedActionsOfAnEndedExecution(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a := f.submit(t, flowtest.ToolAsk)
	f.drain(t)
	if ap, err := f.p.Flow.GetApproval(ctx, a.ActionID); err != nil || ap.Status != actionflow.ApprovalPending {
		t.Fatalf("approval: %+v %v", ap, err)
	}
	// The end was written; the process died before CloseUnstarted.
	e, _ := f.p.Flow.GetExecution(ctx, a.ExecutionID)
	e.Status, e.End = actionflow.ExecFailed, &actionflow.EndInfo{Status: actionflow.ExecFailed, Reason: "iteration_limit", By: "system"}
	if err := f.p.Flow.SaveExecution(ctx, &e, e.Version, 0); err != nil {
		t.Fatal(err)
	}
	rep, err := f.sw.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	ap, _ := f.p.Flow.GetApproval(ctx, a.ActionID)
	rc, err := f.p.Flow.GetReceipt(ctx, a.ActionID)
	if ap.Status != actionflow.ApprovalCancelled || err != nil || rc.Outcome != lifecycle.OutcomeNotStarted {
		t.Fatalf("approval %s, receipt %+v %v (sweep %+v)", ap.Status, rc, err, rep.Actions)
	}
	// A second sweep finds nothing more to do.
	rep, err = f.sw.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ar := range rep.Actions {
		if ar.ActionID == a.ActionID && ar.Did == recovery.ClosedEnded {
			t.Fatalf("closed twice: %+v", ar)
		}
	}
}

func TestOnStatusChangeSweepsOnlyEndedMachines(t *testing.T) {
	cases := []struct {
		status string
		want   bool // repaired
	}{{"FAILED", true}, {"TIMED_OUT", true}, {"ABORTED", true}, {"RUNNING", false}, {"SUCCEEDED", false}}
	for _, tc := range cases {
		t.Run(tc.status, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			f.faulty.SetRewrite(flowtest.EarlierRecord)
			f.w.Bus.Fail(errors.New("its project step failed"))
			a := f.submit(t, flowtest.ToolWrite)
			f.drain(t) // left recorded (an earlier revision's machine); failed
			f.faulty.SetRewrite(nil)
			f.w.Bus.Fail(nil)
			f.sw.OnStatusChange(ctx, string(a.ActionID), tc.status)
			got, _ := f.p.Flow.GetAction(ctx, a.ActionID)
			if got.States.Terminal() != tc.want {
				t.Fatalf("states %+v after %s", got.States, tc.status)
			}
		})
	}
}

// endsAsRead is the machine finishing its own projection between the
// sweeper's read of the action and its read of the machine's status (a
// start-up sweep racing the state machine does exactly this).
type endsAsRead struct {
	flow *actionflow.Service
	in   actionflow.StepInput
}

func (m endsAsRead) Status(ctx context.Context, _ ids.ActionID) (string, error) {
	if _, err := m.flow.Project(ctx, m.in); err != nil {
		return "", err
	}
	return "SUCCEEDED", nil
}

func TestSweepDoesNotProjectAgainWhatTheEndedMachineProjected(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	// An earlier revision's machine: its record step left the action
	// recorded, and its Project state runs as the sweeper looks.
	f.faulty.SetRewrite(flowtest.EarlierRecord)
	f.w.Bus.Fail(errors.New("not yet"))
	a := f.submit(t, flowtest.ToolWrite)
	f.drain(t) // receipt and checkpoint stand; not projected
	f.faulty.SetRewrite(nil)
	f.w.Bus.Fail(nil)
	sw, err := recovery.New(recovery.Config{Flow: f.p.Flow, Control: f.ctl, Logger: f.w.Log,
		Machines: endsAsRead{flow: f.p.Flow, in: actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID}}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sw.SweepAction(ctx, a.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := f.p.Flow.ReadEvents(ctx, session, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	projected := 0
	for _, ev := range evs {
		if ev.Type == "action.projected" {
			projected++
		}
	}
	if projected != 1 || rep.Did != recovery.Left {
		t.Fatalf("action.projected %d times, sweep did %q", projected, rep.Did)
	}
	if pub := f.w.Bus.Published("action.projected"); len(pub) != 1 {
		t.Fatalf("published %d times, want once (the machine's own)", len(pub))
	}
}
