package recovery_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/recovery"
)

// TestSweepRedecidesRestartPauses (issue 11, point 3): an execution that
// start-up recovery paused as unresolved_effect (a host tool in flight at
// the interruption) is decided again by the next periodic sweep, without
// a restart, under the same rules as start-up: continued once the effect
// is known, kept blocked while it is unknown, expired past its deadline.
// The sweep's decision is a system command with a fixed identity derived
// from the decision, so a second sweep (or a racing one) writes nothing.
func TestSweepRedecidesRestartPauses(t *testing.T) {
	cases := []struct {
		name    string
		resolve func(t *testing.T, f *fixture, a actionflow.Action, task actionflow.Task)
		status  actionflow.ExecutionStatus
		outcome string
		blocked string
	}{
		{"the effect becomes known: continued", func(t *testing.T, f *fixture, a actionflow.Action, task actionflow.Task) {
			if err := f.p.Flow.HostResult(context.Background(), a.ActionID, task.AttemptID, task.Fence,
				actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "ok"}); err != nil {
				t.Fatal(err)
			}
		}, actionflow.ExecRunning, recovery.Resumed, ""},
		{"the effect stays unknown: still blocked", func(t *testing.T, f *fixture, a actionflow.Action, _ actionflow.Task) {
			if err := f.p.Engine.TimeOut(context.Background(), a.ActionID); err != nil {
				t.Fatal(err)
			}
		}, actionflow.ExecPaused, recovery.Blocked, recovery.BlockedUnresolved},
		{"the unknown effect is reconciled by a person: continued", func(t *testing.T, f *fixture, a actionflow.Action, _ actionflow.Task) {
			ctx := context.Background()
			if err := f.p.Engine.TimeOut(ctx, a.ActionID); err != nil {
				t.Fatal(err)
			}
			f.drain(t)
			if _, err := f.sw.Sweep(ctx); err != nil { // still unknown: the pause stays blocked
				t.Fatal(err)
			}
			if got := f.exec(t, a.ExecutionID); got.Status != actionflow.ExecPaused || got.Restart.Blocked != recovery.BlockedUnresolved {
				t.Fatalf("before the reconciliation: %s %+v", got.Status, got.Restart)
			}
			human := actionflow.Principal{Subject: "owner", Role: "human", Session: a.SessionID}
			if _, applied, err := f.p.Flow.Reconcile(ctx, a.ActionID, actionflow.ReconcileRequest{
				Outcome: lifecycle.OutcomeFailed, Note: "the file was not written"}, human); err != nil || !applied {
				t.Fatalf("reconcile: applied %v, %v", applied, err)
			}
		}, actionflow.ExecRunning, recovery.Resumed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			a := f.submit(t, flowtest.ToolHost)
			f.drain(t)
			task, err := f.p.Flow.HostStart(ctx, a.ActionID, "att_host")
			if err != nil {
				t.Fatal(err)
			}
			f.start(t) // the process dies while the host runs the tool
			if _, err := f.sw.Startup(ctx, "att_b"); err != nil {
				t.Fatal(err)
			}
			if got := f.exec(t, a.ExecutionID); got.Status != actionflow.ExecPaused || got.Restart == nil ||
				got.Restart.Outcome != recovery.Blocked || got.Restart.Blocked != recovery.BlockedUnresolved {
				t.Fatalf("after start-up: %s %+v", got.Status, got.Restart)
			}
			tc.resolve(t, f, a, task)
			f.drain(t)
			for i := 0; i < 2; i++ { // the second sweep finds nothing to decide
				if _, err := f.sw.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got := f.exec(t, a.ExecutionID)
			if got.Status != tc.status || got.Restart == nil || got.Restart.Outcome != tc.outcome || got.Restart.Blocked != tc.blocked {
				t.Fatalf("after the sweep: %s %+v, want %s %s/%s", got.Status, got.Restart, tc.status, tc.outcome, tc.blocked)
			}
			cmds, err := f.ctl.Commands(ctx, a.ExecutionID, control.SystemPrincipal)
			if err != nil {
				t.Fatal(err)
			}
			restarts := 0
			for _, c := range cmds {
				if c.Type == control.Restart {
					restarts++
				}
			}
			if want := map[string]int{recovery.Resumed: 2, recovery.Blocked: 1}[tc.outcome]; restarts != want {
				t.Fatalf("%d restart commands, want %d: %+v", restarts, want, cmds)
			}
			for _, c := range cmds {
				if c.Type == control.Restart && !strings.HasPrefix(string(c.CommandID), "restart.att_b.v") {
					t.Fatalf("restart command %s: not the start-up attempt's identity", c.CommandID)
				}
			}
		})
	}
}

// TestSweepDecidesAShutdownPauseStartupCouldNotTake: start-up could not
// decide an execution the orderly stop paused (the dead process's lease on
// it was still live); the next sweep after the lease lapsed decides it with
// the start-up rules: continued, within its (unlimited) window.
func TestSweepDecidesAShutdownPauseStartupCouldNotTake(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	e := f.runningExecution(t)
	if _, err := f.sw.Shutdown(ctx, "att_a"); err != nil {
		t.Fatal(err)
	}
	f.start(t)
	if _, err := f.ctl.Acquire(ctx, e.ExecutionID, "att_dead"); err != nil { // a lease the killed process left
		t.Fatal(err)
	}
	reps, err := f.sw.Startup(ctx, "att_b")
	if err != nil || len(reps) != 1 || reps[0].Did != "owned" {
		t.Fatalf("start-up: %+v %v", reps, err)
	}
	if got := f.exec(t, e.ExecutionID); got.Status != actionflow.ExecPaused || got.Restart == nil || got.Restart.Outcome != "" {
		t.Fatalf("after start-up: %s %+v", got.Status, got.Restart)
	}
	f.w.Clock.Advance(time.Minute) // the lease lapses
	if _, err := f.sw.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	got := f.exec(t, e.ExecutionID)
	if got.Status != actionflow.ExecRunning || got.Restart == nil || got.Restart.Outcome != recovery.Resumed || got.Restart.Reason != "shutdown" {
		t.Fatalf("after the sweep: %s %+v", got.Status, got.Restart)
	}
	want := "restart.att_b.v" + strconv.FormatInt(got.Version-1, 10)
	if got.LastCommand == nil || string(got.LastCommand.ID) != want {
		t.Fatalf("decided by %+v, want command %s", got.LastCommand, want)
	}
}
