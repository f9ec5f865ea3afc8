//go:build faultinject

package recovery_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/recovery"
)

// TestFaultInjectionMatrix is the acceptance the specification names: a
// crash at each named point (after start evidence, after the executor
// returned, after the receipt, after the checkpoint, after projection), on
// the sync and the host executor path, under both crash semantics (the
// embedded engine resumes the interrupted state; in AWS the state's Catch
// routes a Lambda crash), with and without a user pause taken while the
// action runs. Then restart: a new process (new engine, new services) over
// the same store, start-up recovery, sweeps. It proves a mutating executor
// is never called twice, a known result is never lost or turned unknown,
// an uncertain operation stays blocked for reconciliation, and user stop
// intent is preserved.
func TestFaultInjectionMatrix(t *testing.T) {
	type path struct {
		name string
		tool string
		host bool
	}
	paths := []path{{"sync", flowtest.ToolWrite, false}, {"host", flowtest.ToolHost, true}, {"approved sync", flowtest.ToolAsk, false}}
	modes := []struct {
		name string
		mode flowtest.CrashMode
	}{{"embedded resume", flowtest.Resume}, {"aws catch", flowtest.Catch}}
	for _, point := range faults.Points {
		for _, p := range paths {
			for _, m := range modes {
				for _, userPause := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/%s/pause=%v", point, p.name, m.name, userPause)
					t.Run(name, func(t *testing.T) {
						runMatrixCase(t, point, p.tool, p.host, m.mode, userPause)
					})
				}
			}
		}
	}
}

func runMatrixCase(t *testing.T, point, tool string, host bool, mode flowtest.CrashMode, userPause bool) {
	defer faults.Reset()
	ctx := context.Background()
	f := newFixture(t)
	f.w.Mode = mode
	f.start(t)
	executor := f.w.Sync
	if host {
		executor = f.w.Host
	}
	var fired atomic.Bool
	faults.Arm(point, func(context.Context) bool { return fired.CompareAndSwap(false, true) })

	a := f.submit(t, tool)
	paused := false
	if userPause {
		// The user pauses while the action is on its way to dispatch.
		f.p.Engine.OnTransition = func(name ids.ActionID, from, to string) {
			if paused || (to != "DispatchSync" && to != "DispatchHost") {
				return
			}
			paused = true
			e, _ := f.p.Flow.GetExecution(ctx, a.ExecutionID)
			if r, err := f.ctl.Submit(ctx, a.ExecutionID, control.Command{ID: "cmd_user_pause", Type: control.Pause, ExpectedVersion: e.Version}, flowtest.Human(session)); err != nil || r.Status != control.StatusApplied {
				t.Errorf("user pause: %+v %v", r, err)
			}
		}
	}
	// Run until the fault fires (a crash stops the process in resume mode;
	// in catch mode the machine routes it and the process keeps going).
	crashed := false
	for i := 0; i < 6 && !crashed; i++ {
		err := f.p.Engine.Drain(ctx)
		if err == nil && host {
			_, err = f.p.RunHostTasks(ctx)
		}
		if err == nil {
			_, err = f.p.DecidePending(ctx, session, "approve")
		}
		switch {
		case err == nil:
		case isCrash(err):
			crashed = true
		default:
			t.Fatal(err)
		}
	}
	if !fired.Load() {
		t.Fatalf("fault %s never fired", point)
	}
	faults.Reset()
	f.restart(t, mode)
	f.settle(t)
	// The stack's status-change rule (EventBridge on AWS, the engine's
	// callback embedded): a machine that ended failed is swept at once.
	if st, err := f.p.Engine.Status(ctx, a.ActionID); err == nil {
		f.sw.OnStatusChange(ctx, string(a.ActionID), st)
	}

	// A mutating executor is never called twice.
	calls := executor.Calls()[a.ActionID]
	if calls > 1 || f.w.Sync.Total()+f.w.Host.Total() > 1 {
		t.Fatalf("executor called %d times (sync %d, host %d)", calls, f.w.Sync.Total(), f.w.Host.Total())
	}
	got, _ := f.p.Flow.GetAction(ctx, a.ActionID)
	rc, err := f.p.Flow.GetReceipt(ctx, a.ActionID)
	if err != nil || !got.States.Terminal() || got.States.Outcome != rc.Outcome {
		t.Fatalf("receipt %+v (%v), states %+v", rc, err, got.States)
	}
	// The outcome is what the evidence says, never more, never less.
	resultWasDurable := point == faults.AfterReceipt || point == faults.AfterCheckpoint || point == faults.AfterProjection ||
		(point == faults.AfterExecutor && host) // the host's result is stored before the point
	switch {
	case calls == 0:
		if rc.Outcome != lifecycle.OutcomeUnknown || point != faults.AfterStartEvidence {
			t.Fatalf("never executed, outcome %s at %s", rc.Outcome, point)
		}
	case resultWasDurable:
		if rc.Outcome != lifecycle.OutcomeSucceeded || rc.Output != executor.Log()[0].Result.Output {
			t.Fatalf("a known result was lost: %+v", rc)
		}
	default: // executed, result not durable yet: unknown, or the result if it was stored
		if rc.Outcome != lifecycle.OutcomeUnknown && rc.Outcome != lifecycle.OutcomeSucceeded {
			t.Fatalf("executed, outcome %s", rc.Outcome)
		}
	}
	ck, _ := f.p.Flow.GetCheckpoint(ctx, a.ExecutionID)
	if ck.Recorded != 1 {
		t.Fatalf("the receipt was folded %d times", ck.Recorded)
	}
	checkEventLog(t, f.p.Flow, session)
	// The projection is stored once and that event was published (a crash
	// between the record step's transaction and its publish included).
	var stored []actionflow.Event
	evs, _ := f.p.Flow.ReadEvents(ctx, session, 0, 1000)
	for _, ev := range evs {
		if ev.Type == "action.projected" && ev.ActionID == a.ActionID {
			stored = append(stored, ev)
		}
	}
	published := false
	for _, ev := range f.w.Bus.Published("action.projected") {
		published = published || (ev.ActionID == a.ActionID && len(stored) == 1 && ev.Seq == stored[0].Seq)
	}
	if len(stored) != 1 || !published {
		t.Fatalf("action.projected stored %d times, published: %v", len(stored), published)
	}

	// An uncertain operation stays blocked for reconciliation, across
	// further restarts and sweeps, and is never re-dispatched.
	e, _ := f.p.Flow.GetExecution(ctx, a.ExecutionID)
	if rc.Outcome == lifecycle.OutcomeUnknown {
		if rc.Reconciliation == "" {
			t.Fatal("unknown without reconciliation guidance")
		}
		un, _ := f.p.Flow.UnresolvedActions(ctx, a.ExecutionID)
		if len(un) != 1 {
			t.Fatalf("%d unresolved actions", len(un))
		}
		f.restart(t, mode)
		f.settle(t)
		e, _ = f.p.Flow.GetExecution(ctx, a.ExecutionID)
		if !userPause && (e.Status != actionflow.ExecPaused || e.Restart == nil || e.Restart.Blocked != recovery.BlockedUnresolved) {
			t.Fatalf("an uncertain operation did not keep the execution blocked: %s %+v", e.Status, e.Restart)
		}
		if executor.Calls()[a.ActionID] != calls {
			t.Fatal("re-dispatched an uncertain operation")
		}
	}
	// User stop intent is preserved.
	if userPause {
		if !paused {
			t.Fatal("the pause was never sent")
		}
		if e.Status != actionflow.ExecPaused || e.PauseOwner != actionflow.PauseByUser {
			t.Fatalf("user pause lost: %s owner %q", e.Status, e.PauseOwner)
		}
	} else if rc.Outcome != lifecycle.OutcomeUnknown && e.Status != actionflow.ExecRunning {
		t.Fatalf("execution %s after a recovered crash", e.Status)
	}
}
