package embedded_test

import (
	"context"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/recovery"
)

// Closing the stack pauses running executions for restart recovery; the
// next start continues them within the window (unlimited by default) and
// leaves them paused, with their checkpoint, when the window is 0.
func TestRestartContinuationThroughTheStack(t *testing.T) {
	cases := []struct {
		name    string
		window  recovery.Window
		status  actionflow.ExecutionStatus
		outcome string
	}{
		{"unlimited window: continued", recovery.Unlimited(), actionflow.ExecRunning, recovery.Resumed},
		{"window 0: kept paused for a manual continue", recovery.Within(0), actionflow.ExecPaused, recovery.Expired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir, ws := t.TempDir(), t.TempDir()
			ex := &countingExecutor{}
			window := func(c *embedded.Config) { c.RestartWindow = tc.window }
			s := start(t, dir, ws, ex, window)
			a := submit(t, s, "mutate", `{"target":"a"}`)
			waitFor(t, s, a.ActionID, terminal)
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			s = start(t, dir, ws, ex, window)
			defer s.Close(ctx)
			e, err := s.Service.GetExecution(ctx, a.ExecutionID)
			if err != nil || e.Status != tc.status || e.Restart == nil || e.Restart.Outcome != tc.outcome || e.Restart.Reason != "shutdown" {
				t.Fatalf("after restart: %+v %v", e, err)
			}
			if ex.calls.Load() != 1 {
				t.Fatalf("executor called %d times", ex.calls.Load())
			}
		})
	}
}

// The command service of the stack: a paused execution admits nothing new;
// Continue lets work through again.
func TestPauseAndContinueThroughTheStack(t *testing.T) {
	ctx := context.Background()
	dir, ws := t.TempDir(), t.TempDir()
	ex := &countingExecutor{}
	s := start(t, dir, ws, ex)
	defer s.Close(ctx)
	human := actionflow.Principal{Subject: "alice", Role: "human", Session: "ses_e2e", Origin: "test"}
	first := submit(t, s, "mutate", `{"target":"1"}`)
	waitFor(t, s, first.ActionID, terminal)
	view, err := s.Control.Get(ctx, first.ExecutionID, human)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Control.Submit(ctx, first.ExecutionID, control.Command{ID: "cmd_pause", Type: control.Pause, ExpectedVersion: view.Execution.Version}, human)
	if err != nil || r.Status != control.StatusApplied {
		t.Fatalf("pause: %+v %v", r, err)
	}
	blocked, _, err := s.Service.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_e2e", ExecutionID: first.ExecutionID, ToolCallID: "call_2",
		Tool: "mutate", Arguments: []byte(`{"target":"2"}`), Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, s, blocked.ActionID, terminal)
	rc, _ := s.Service.GetReceipt(ctx, blocked.ActionID)
	if got.States.Outcome != lifecycle.OutcomeNotStarted || rc.ErrorCode != "permission_denied:execution_paused" {
		t.Fatalf("paused execution admitted work: %+v %s", got.States, rc.ErrorCode)
	}
	view, _ = s.Control.Get(ctx, first.ExecutionID, human)
	r, err = s.Control.Submit(ctx, first.ExecutionID, control.Command{ID: "cmd_continue", Type: control.Continue, ExpectedVersion: view.Execution.Version}, human)
	if err != nil || r.Status != control.StatusApplied {
		t.Fatalf("continue: %+v %v", r, err)
	}
	next, _, err := s.Service.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_e2e", ExecutionID: first.ExecutionID, ToolCallID: "call_3",
		Tool: "mutate", Arguments: []byte(`{"target":"4"}`), Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, s, next.ActionID, terminal); got.States.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("after continue: %+v", got.States)
	}
}
