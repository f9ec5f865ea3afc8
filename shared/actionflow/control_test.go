package actionflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
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
			if got.States.Delivery != lifecycle.DeliveryProjected || out.States != got.States || out.Seq == 0 {
				t.Fatalf("delivery %s after the fold (output %+v)", got.States.Delivery, out)
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

// TestSavedPointsAreKept: every checkpoint version an execution writes is
// kept as an immutable saved point, written in the checkpoint's own
// transaction; any of them (and 0, the start) can be read back; a version
// above the current checkpoint, or one written before saved points were
// kept, is a *SavedPointError.
func TestSavedPointsAreKept(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var actions []actionflow.Action
	for i := 0; i < 3; i++ {
		a, _, err := f.svc.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_1", ExecutionID: "exe_src", ToolCallID: ids.ToolCallID(fmt.Sprintf("c%d", i)),
			Tool: "noop", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
		if err != nil {
			t.Fatal(err)
		}
		si := in(a)
		if _, err := f.svc.Authorize(ctx, si); err != nil {
			t.Fatal(err)
		}
		si.Mode = "sync"
		res, err := f.svc.Dispatch(ctx, si)
		if err != nil {
			t.Fatal(err)
		}
		si.Mode, si.Result = "", &res
		actions = append(actions, f.finish(t, si))
	}
	src, err := f.svc.GetCheckpoint(ctx, "exe_src")
	if err != nil || src.Version != 3 {
		t.Fatalf("source checkpoint %+v %v", src, err)
	}
	// A checkpoint written before saved points were kept (no CKPT# items).
	legacy := store.Item{PK: "EXEC#exe_old", SK: "CKPT", Version: 4, Body: []byte(`{"execution_id":"exe_old","recorded":4,"last_action_id":"act_x","recent_failures":{}}`)}
	if err := f.st.PutOnce(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		exec     ids.ExecutionID
		version  int64
		recorded int64
		last     ids.ActionID
		missing  bool
	}{
		{"the start", "exe_src", 0, 0, "", false},
		{"the first receipt", "exe_src", 1, 1, actions[0].ActionID, false},
		{"a middle version", "exe_src", 2, 2, actions[1].ActionID, false},
		{"the current checkpoint", "exe_src", 3, 3, actions[2].ActionID, false},
		{"above the current checkpoint", "exe_src", 4, 0, "", true},
		{"negative", "exe_src", -1, 0, "", true},
		{"written before saved points were kept", "exe_old", 2, 0, "", true},
		{"the current checkpoint of an old execution", "exe_old", 4, 4, "act_x", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ck, err := f.svc.SavedPointState(ctx, tc.exec, tc.version)
			var spe *actionflow.SavedPointError
			if tc.missing {
				if !errors.As(err, &spe) || spe.Requested != tc.version {
					t.Fatalf("want a SavedPointError, got %+v %v", ck, err)
				}
				return
			}
			if err != nil || ck.Version != tc.version || ck.Recorded != tc.recorded || ck.LastActionID != tc.last || len(ck.Folded) != 0 {
				t.Fatalf("saved point %d: %+v %v", tc.version, ck, err)
			}
		})
	}
	e, err := f.svc.GetExecution(ctx, "exe_src")
	if err != nil {
		t.Fatal(err)
	}
	if it, err := f.st.Get(ctx, store.Key{PK: "EXEC#exe_src", SK: "CKPT#00000000000000000003"}); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("a saved point's body: %d bytes", len(it.Body))
	}
	points, truncated, err := f.svc.SavedPoints(ctx, e)
	if err != nil || truncated || len(points) != 4 || points[0].Version != 0 || points[3].Version != 3 || points[2].LastActionID != actions[1].ActionID {
		t.Fatalf("listed saved points %+v %v %v", points, truncated, err)
	}
}

// TestCreateChild: a child is created with its parent's link, its first
// checkpoint and saved point in one transaction guarded by the parent's
// version; a repeat finds it; a parent that moved writes nothing.
func TestCreateChild(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	parent := actionflow.Execution{ExecutionID: "exe_p", SessionID: "ses_1", RunID: "run_1", BranchID: "exe_p", Kind: "agent_chat", Status: actionflow.ExecRunning}
	if err := f.svc.PutExecution(ctx, &parent); err != nil {
		t.Fatal(err)
	}
	child := func(id ids.ExecutionID) *actionflow.Execution {
		return &actionflow.Execution{ExecutionID: id, SessionID: "ses_1", RunID: "run_1", ParentID: "exe_p", BranchID: string(id), Kind: "agent_chat", Status: actionflow.ExecPaused}
	}
	from := actionflow.Checkpoint{Recorded: 7, LastActionID: "act_7", Version: 7}
	created, err := f.svc.CreateChild(ctx, parent, child("exe_c1"), &from)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if ck, err := f.svc.SavedPointState(ctx, "exe_c1", 1); err != nil || ck.Recorded != 7 || ck.LastActionID != "act_7" {
		t.Fatalf("child's saved point 1: %+v %v", ck, err)
	}
	if created, err := f.svc.CreateChild(ctx, parent, child("exe_c1"), &from); err != nil || created {
		t.Fatalf("repeat: %v %v", created, err)
	}
	// The parent moves (as a Cancel would move it) after it was read.
	moved := parent
	moved.Status = actionflow.ExecCancelling
	if err := f.svc.SaveExecution(ctx, &moved, parent.Version, 0); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.CreateChild(ctx, parent, child("exe_c2"), &from)
	var pm *actionflow.ParentMovedError
	if !errors.As(err, &pm) || pm.Expected != 1 || pm.Actual != 2 {
		t.Fatalf("parent moved: %v", err)
	}
	for _, k := range []store.Key{{PK: "EXEC#exe_c2", SK: "META"}, {PK: "EXEC#exe_c2", SK: "CKPT#00000000000000000001"}, {PK: "EXEC#exe_p", SK: "CHILD#exe_c2"}} {
		if _, err := f.st.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s written by a refused creation: %v", k, err)
		}
	}
	kids, err := f.svc.Children(ctx, moved)
	if err != nil || len(kids) != 1 || kids[0] != "exe_c1" {
		t.Fatalf("children %v %v", kids, err)
	}
}
