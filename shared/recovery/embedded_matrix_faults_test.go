//go:build faultinject

package recovery_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/recovery"
)

// TestEmbeddedFaultInjectionMatrix is the fault matrix over the embedded
// stack itself: the real engine (sfnlocal) interpreting the ASL file over
// SQLite, killed at each injected point (its in-flight invocations
// abandoned) and restarted as a new engine and new services over the same
// file. With and without a user pause saved while the process was dying.
func TestEmbeddedFaultInjectionMatrix(t *testing.T) {
	paths := []struct {
		name string
		tool string
		host bool
	}{{"sync", flowtest.ToolWrite, false}, {"host", flowtest.ToolHost, true}, {"approved sync", flowtest.ToolAsk, false}}
	for _, point := range faults.Points {
		for _, p := range paths {
			for _, userPause := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/pause=%v", point, p.name, userPause), func(t *testing.T) {
					runEmbeddedCase(t, point, p.tool, p.host, userPause)
				})
			}
		}
	}
}

func runEmbeddedCase(t *testing.T, point, tool string, host, userPause bool) {
	defer faults.Reset()
	ctx := context.Background()
	e := newEmbedded(t)
	executor := e.sync
	if host {
		executor = e.host
	}
	var fired atomic.Bool
	faults.Arm(point, func(context.Context) bool { return fired.CompareAndSwap(false, true) })
	a, _, err := e.flow.Submit(ctx, actionflow.SubmitRequest{SessionID: session, ToolCallID: "call_1", Tool: tool,
		Arguments: []byte(`{"v":1}`), Interactive: true, Principal: actionflow.Principal{Subject: "agent", Role: "agent", Session: session}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6 && !e.dead(); i++ {
		if !e.wait() {
			break
		}
		e.runHosts()
		e.decideAll("approve")
	}
	// settled() reads the open-action index, which a projection leaves just
	// before the after_projection point: give the engine its last moment.
	for deadline := time.Now().Add(10 * time.Second); (!fired.Load() || !e.dead()) && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
	if !fired.Load() || !e.dead() {
		t.Fatalf("fault %s: fired %v, process dead %v", point, fired.Load(), e.dead())
	}
	faults.Reset()
	if userPause {
		// The user's pause reaches the store (through the API) while the
		// worker process is dying.
		exe, _ := e.flow.GetExecution(ctx, a.ExecutionID)
		r, err := e.ctl.Submit(ctx, a.ExecutionID, control.Command{ID: "cmd_user_pause", Type: control.Pause, ExpectedVersion: exe.Version}, flowtest.Human(session))
		if err != nil || r.Status != control.StatusApplied {
			t.Fatalf("user pause: %+v %v", r, err)
		}
	}
	e.restart()
	e.finish()

	calls := executor.Calls()[a.ActionID]
	if calls > 1 || e.sync.Total()+e.host.Total() > 1 {
		t.Fatalf("executor called %d times", calls)
	}
	got, _ := e.flow.GetAction(ctx, a.ActionID)
	rc, err := e.flow.GetReceipt(ctx, a.ActionID)
	if err != nil || !got.States.Terminal() || got.States.Outcome != rc.Outcome {
		t.Fatalf("receipt %+v (%v), states %+v", rc, err, got.States)
	}
	resultWasDurable := point == faults.AfterReceipt || point == faults.AfterCheckpoint || point == faults.AfterProjection ||
		(point == faults.AfterExecutor && host)
	switch {
	case calls == 0:
		if rc.Outcome != lifecycle.OutcomeUnknown || point != faults.AfterStartEvidence {
			t.Fatalf("never executed, outcome %s", rc.Outcome)
		}
	case resultWasDurable:
		if rc.Outcome != lifecycle.OutcomeSucceeded || rc.Output != executor.Log()[0].Result.Output {
			t.Fatalf("a known result was lost: %+v", rc)
		}
	default:
		if rc.Outcome != lifecycle.OutcomeUnknown && rc.Outcome != lifecycle.OutcomeSucceeded {
			t.Fatalf("executed, outcome %s", rc.Outcome)
		}
	}
	if ck, _ := e.flow.GetCheckpoint(ctx, a.ExecutionID); ck.Recorded != 1 {
		t.Fatalf("folded %d times", ck.Recorded)
	}
	checkEventLog(t, e.flow, session)

	if rc.Outcome == lifecycle.OutcomeUnknown {
		if rc.Reconciliation == "" {
			t.Fatal("unknown without reconciliation guidance")
		}
		// Another restart and sweeps: still blocked, never re-dispatched.
		// (Two: restart decisions are taken at start-up, and the first one
		// may still see the action in flight.)
		e.restart()
		e.finish()
		e.restart()
		e.finish()
		if executor.Calls()[a.ActionID] != calls {
			t.Fatal("re-dispatched an uncertain operation")
		}
		exe, _ := e.flow.GetExecution(ctx, a.ExecutionID)
		if !userPause && (exe.Status != actionflow.ExecPaused || exe.Restart == nil || exe.Restart.Blocked != recovery.BlockedUnresolved) {
			t.Fatalf("not blocked for reconciliation: %s %+v", exe.Status, exe.Restart)
		}
		// A person reconciles it (issue 12): the next periodic sweep
		// continues the execution; a user's pause stays. Nothing runs again.
		if _, applied, err := e.flow.Reconcile(ctx, a.ActionID, actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeFailed,
			Note: "checked the target: nothing was written"}, flowtest.Human(session)); err != nil || !applied {
			t.Fatalf("reconcile: applied %v, %v", applied, err)
		}
		if _, err := e.sw.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		exe, _ = e.flow.GetExecution(ctx, a.ExecutionID)
		if !userPause && (exe.Status != actionflow.ExecRunning || exe.Restart == nil || exe.Restart.Outcome != recovery.Resumed) {
			t.Fatalf("not continued after the reconciliation: %s %+v", exe.Status, exe.Restart)
		}
		if got, _ := e.flow.GetAction(ctx, a.ActionID); got.States.Outcome != lifecycle.OutcomeFailed || !got.States.Reconciled ||
			executor.Calls()[a.ActionID] != calls {
			t.Fatalf("after the reconciliation: %+v, %d calls", got.States, executor.Calls()[a.ActionID])
		}
		if after, _ := e.flow.GetReceipt(ctx, a.ActionID); after.Digest != rc.Digest || after.Outcome != lifecycle.OutcomeUnknown {
			t.Fatalf("the receipt was rewritten: %+v", after)
		}
	}
	if !userPause && rc.Outcome != lifecycle.OutcomeUnknown {
		// A restart decision taken while the action was still in flight
		// blocks on it; the next start-up sees the known result.
		e.restart()
		e.finish()
	}
	exe, _ := e.flow.GetExecution(ctx, a.ExecutionID)
	if userPause && (exe.Status != actionflow.ExecPaused || exe.PauseOwner != actionflow.PauseByUser) {
		t.Fatalf("user pause lost: %s %q", exe.Status, exe.PauseOwner)
	}
	if !userPause && rc.Outcome != lifecycle.OutcomeUnknown && exe.Status != actionflow.ExecRunning {
		t.Fatalf("execution %s after a recovered crash (pause owner %q, restart %+v, outcome %s)", exe.Status, exe.PauseOwner, exe.Restart, rc.Outcome)
	}
}
