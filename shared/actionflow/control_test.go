package actionflow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

func TestExecutionControlGatesAdmission(t *testing.T) {
	cases := []struct {
		name      string
		status    actionflow.ExecutionStatus
		budget    int
		wantFirst lifecycle.Permission
		wantCode  string
	}{
		{"running admits", actionflow.ExecRunning, 0, lifecycle.PermissionAllow, ""},
		{"paused refuses new work", actionflow.ExecPaused, 0, lifecycle.PermissionDeny, "execution_paused"},
		{"cancelling refuses", actionflow.ExecCancelling, 0, lifecycle.PermissionDeny, "execution_cancelled"},
		{"cancelled refuses", actionflow.ExecCancelled, 0, lifecycle.PermissionDeny, "execution_cancelled"},
		{"step admits one", actionflow.ExecRunning, 1, lifecycle.PermissionAllow, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			a := f.submit(t, "noop", `{"n":1}`)
			e, _ := f.svc.GetExecution(ctx, a.ExecutionID)
			e.Status, e.StepBudget = tc.status, tc.budget
			if err := f.svc.SaveExecution(ctx, &e, e.Version, 0); err != nil {
				t.Fatal(err)
			}
			d, err := f.svc.Authorize(ctx, in(a))
			if err != nil || d.Permission != tc.wantFirst || d.ReasonCode != orDefault(tc.wantCode, d.ReasonCode) {
				t.Fatalf("authorize: %+v %v", d, err)
			}
			if tc.budget > 0 {
				after, _ := f.svc.GetExecution(ctx, a.ExecutionID)
				if after.Status != actionflow.ExecPaused || after.PauseOwner != actionflow.PauseByUser || after.StepAdmitted != a.ActionID {
					t.Fatalf("after one step: %+v", after)
				}
				// The next action of the execution is not admitted.
				b, _, err := f.svc.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_1", ExecutionID: a.ExecutionID, ToolCallID: "c2", Tool: "noop", Arguments: []byte(`{"n":2}`)})
				if err != nil {
					t.Fatal(err)
				}
				if d2, _ := f.svc.Authorize(ctx, in(b)); d2.Permission != lifecycle.PermissionDeny || d2.ReasonCode != "execution_paused" {
					t.Fatalf("second action after a step: %+v", d2)
				}
			}
			if tc.wantFirst == lifecycle.PermissionDeny {
				si := in(a)
				si.Mode = "sync"
				if _, err := f.svc.Dispatch(ctx, si); err == nil {
					t.Fatal("dispatch of a refused action succeeded")
				}
				got := f.finish(t, in(a))
				rc, _ := f.svc.GetReceipt(ctx, a.ActionID)
				if got.States.Outcome != lifecycle.OutcomeNotStarted || rc.ErrorCode != "permission_denied:"+tc.wantCode || f.exec.calls.Load() != 0 {
					t.Fatalf("states %+v receipt %s calls %d", got.States, rc.ErrorCode, f.exec.calls.Load())
				}
			}
		})
	}
}

func orDefault(want, got string) string {
	if want == "" {
		return got
	}
	return want
}

func TestCancelActionClosesUnstartedActions(t *testing.T) {
	ctx := context.Background()
	t.Run("allowed, not dispatched yet: the claim is refused", func(t *testing.T) {
		f := newFixture(t)
		a := f.submit(t, "noop", `{}`)
		f.svc.Authorize(ctx, in(a))
		started, err := f.svc.CancelAction(ctx, a.ActionID, "execution_cancelled")
		if err != nil || started {
			t.Fatalf("cancel: %v %v", started, err)
		}
		si := in(a)
		si.Mode = "sync"
		_, err = f.svc.Dispatch(ctx, si)
		var pe *actionflow.PermanentError
		if !errors.As(err, &pe) || pe.Code != "closed" {
			t.Fatalf("dispatch of a closed action: %v", err)
		}
		si.Error = &actionflow.CaughtError{Error: "PermanentError", Cause: err.Error()}
		got := f.finish(t, si)
		if f.exec.calls.Load() != 0 || got.States.Outcome != lifecycle.OutcomeNotStarted {
			t.Fatalf("calls %d states %+v", f.exec.calls.Load(), got.States)
		}
	})
	t.Run("waiting for approval: the wait is cancelled and failed", func(t *testing.T) {
		f := newFixture(t)
		a := f.submit(t, "risky", `{}`)
		f.svc.Authorize(ctx, in(a))
		await := in(a)
		await.Mode, await.TaskToken = "await", "tok-1"
		if _, err := f.svc.ApprovalStep(ctx, await); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.CancelAction(ctx, a.ActionID, "execution_cancelled"); err != nil {
			t.Fatal(err)
		}
		ap, _ := f.svc.GetApproval(ctx, a.ActionID)
		if ap.Status != actionflow.ApprovalCancelled || f.tasks.failure["tok-1"] != actionflow.ExecutionCancelled {
			t.Fatalf("approval %s, failure %v", ap.Status, f.tasks.failure)
		}
		// A late human answer cannot approve a cancelled wait.
		if _, err := f.svc.DecideApproval(ctx, ap.ApprovalID, "approve", a.ArgsDigest, actionflow.Principal{Subject: "h", Role: "human", Session: "ses_1"}); err == nil {
			t.Fatal("a cancelled wait was approved")
		}
	})
	t.Run("closed before its wait is stored: the await step cancels its own wait", func(t *testing.T) {
		f := newFixture(t)
		a := f.submit(t, "risky", `{}`)
		f.svc.Authorize(ctx, in(a))
		f.svc.CancelAction(ctx, a.ActionID, "execution_cancelled")
		await := in(a)
		await.Mode, await.TaskToken = "await", "tok-2"
		if _, err := f.svc.ApprovalStep(ctx, await); err == nil {
			t.Fatal("a wait was published for a closed action")
		}
	})
	t.Run("already started: left to finish", func(t *testing.T) {
		f := newFixture(t)
		a := f.submit(t, "noop", `{}`)
		f.svc.Authorize(ctx, in(a))
		si := in(a)
		si.Mode = "sync"
		f.svc.Dispatch(ctx, si)
		started, err := f.svc.CancelAction(ctx, a.ActionID, "execution_cancelled")
		if err != nil || !started {
			t.Fatalf("cancel of a started action: %v %v", started, err)
		}
		got := f.finish(t, in(a)) // no $.result: record uses the stored result
		if got.States.Outcome != lifecycle.OutcomeSucceeded {
			t.Fatalf("states %+v", got.States)
		}
	})
}

func TestRecoverUsesDurableEvidenceOnly(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		dispatch bool
		want     lifecycle.Outcome
	}{
		{"dispatched with a stored result keeps it", true, lifecycle.OutcomeSucceeded},
		{"never dispatched is not started", false, lifecycle.OutcomeNotStarted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			a := f.submit(t, "noop", `{}`)
			f.svc.Authorize(ctx, in(a))
			if tc.dispatch {
				si := in(a)
				si.Mode = "sync"
				f.svc.Dispatch(ctx, si)
			}
			si := in(a)
			// Whatever a caller passes as a result, recovery ignores it.
			si.Result = &actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "tool text"}
			out, err := f.svc.Recover(ctx, si)
			if err != nil || out.Outcome != tc.want {
				t.Fatalf("recover: %+v %v", out, err)
			}
			rc, _ := f.svc.GetReceipt(ctx, a.ActionID)
			if rc.RecordedBy != "recover" {
				t.Fatalf("recorded by %q", rc.RecordedBy)
			}
			got, _ := f.svc.GetAction(ctx, a.ActionID)
			if got.States.Delivery != lifecycle.DeliveryRecorded {
				t.Fatalf("delivery %s after the fold", got.States.Delivery)
			}
			if ok, _ := f.svc.ActionRecorded(ctx, got); !ok {
				t.Fatal("not recorded")
			}
			// Recovering again changes nothing.
			f.svc.Recover(ctx, in(a))
			if ck, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID); ck.Recorded != 1 {
				t.Fatalf("folded %d times", ck.Recorded)
			}
		})
	}
}

func TestForkCheckpointAllowsOnlySavedPoints(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a := f.submit(t, "noop", `{}`)
	f.svc.Authorize(ctx, in(a))
	f.finish(t, in(a))
	src, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID)
	var spe *actionflow.SavedPointError
	if _, err := f.svc.ForkCheckpoint(ctx, a.ExecutionID, src.Version+5, "exe_child0"); !errors.As(err, &spe) {
		t.Fatalf("fork from an unknown point: %v", err)
	}
	ck, err := f.svc.ForkCheckpoint(ctx, a.ExecutionID, src.Version, "exe_child1")
	if err != nil || ck.Recorded != src.Recorded || ck.ExecutionID != "exe_child1" {
		t.Fatalf("fork: %+v %v", ck, err)
	}
	if again, err := f.svc.ForkCheckpoint(ctx, a.ExecutionID, src.Version, "exe_child1"); err != nil || again.Version != ck.Version {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if after, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID); after.Version != src.Version {
		t.Fatal("forking changed the source checkpoint")
	}
}
