package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

const session = ids.SessionID("ses_1")

var human = flowtest.Human(session)

type fixture struct {
	p   *flowtest.Process
	svc *control.Service
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	w := flowtest.NewWorld(t)
	p := w.Start(t)
	svc, err := control.New(control.Config{Flow: p.Flow, Logger: w.Log})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{p: p, svc: svc}
}

// execution creates an execution directly (version 1).
func (f fixture) execution(t *testing.T, id ids.ExecutionID, kind string, status actionflow.ExecutionStatus) actionflow.Execution {
	t.Helper()
	e := actionflow.Execution{ExecutionID: id, SessionID: session, RunID: "run_1", BranchID: string(id), Kind: kind, Status: status}
	if status == actionflow.ExecPaused {
		e.PauseOwner = actionflow.PauseByUser
	}
	if err := f.p.Flow.PutExecution(context.Background(), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func (f fixture) get(t *testing.T, id ids.ExecutionID) actionflow.Execution {
	t.Helper()
	e, err := f.p.Flow.GetExecution(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func cmd(id string, typ control.Control, version int64, payload string) control.Command {
	c := control.Command{ID: ids.CommandID(id), Type: typ, ExpectedVersion: version}
	if payload != "" {
		c.Payload = json.RawMessage(payload)
	}
	return c
}

func TestSubmitAppliesEachControl(t *testing.T) {
	cases := []struct {
		name    string
		kind    string
		from    actionflow.ExecutionStatus
		typ     control.Control
		payload string
		check   func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record)
	}{
		{"pause a running execution", "agent_chat", actionflow.ExecRunning, control.Pause, "", func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record) {
			if after.Status != actionflow.ExecPaused || after.PauseOwner != actionflow.PauseByUser {
				t.Fatalf("after pause: %s owner %q", after.Status, after.PauseOwner)
			}
		}},
		{"continue a paused execution", "agent_chat", actionflow.ExecPaused, control.Continue, "", func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record) {
			if after.Status != actionflow.ExecRunning || after.PauseOwner != "" {
				t.Fatalf("after continue: %s owner %q", after.Status, after.PauseOwner)
			}
		}},
		{"step runs a budget", "function", actionflow.ExecPaused, control.Step, `{"steps":2}`, func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record) {
			if after.Status != actionflow.ExecRunning || after.StepBudget != 2 {
				t.Fatalf("after step: %s budget %d", after.Status, after.StepBudget)
			}
		}},
		{"steer appends instructions", "agent_chat", actionflow.ExecRunning, control.Steer, `{"instructions":"use the staging database"}`, func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record) {
			if len(after.Steering) != 1 || after.Steering[0] != "use the staging database" || after.Status != actionflow.ExecRunning {
				t.Fatalf("after steer: %+v", after)
			}
		}},
		{"cancel with nothing running ends at once", "job", actionflow.ExecRunning, control.Cancel, `{"reason":"wrong task"}`, func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record) {
			if after.Status != actionflow.ExecCancelled {
				t.Fatalf("after cancel: %s", after.Status)
			}
		}},
		{"fork an agent chat: paused child on a new branch", "agent_chat", actionflow.ExecRunning, control.Fork, "", func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record) {
			if after.Version != before.Version {
				t.Fatalf("fork changed the source: version %d -> %d", before.Version, after.Version)
			}
			child := f.get(t, r.Child)
			if child.ParentID != before.ExecutionID || child.RunID != before.RunID || child.SessionID != before.SessionID ||
				child.BranchID == before.BranchID || child.Status != actionflow.ExecPaused || child.PauseOwner != actionflow.PauseByFork ||
				child.ForkPoint == nil || *child.ForkPoint != 0 {
				t.Fatalf("child %+v", child)
			}
		}},
		{"set_revision_policy sets the policy and nothing else", "agent_chat", actionflow.ExecPaused, control.SetRevisionPolicy, `{"policy":"use_latest"}`, func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record) {
			if after.RevisionPolicy != actionflow.UseLatest || after.Status != actionflow.ExecPaused || after.PauseOwner != before.PauseOwner {
				t.Fatalf("after set_revision_policy: policy %q status %s owner %q", after.RevisionPolicy, after.Status, after.PauseOwner)
			}
		}},
		{"continue may choose the revision policy", "agent_chat", actionflow.ExecPaused, control.Continue, `{"revision_policy":"use_latest"}`, func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record) {
			if after.Status != actionflow.ExecRunning || after.RevisionPolicy != actionflow.UseLatest {
				t.Fatalf("after continue: %s policy %q", after.Status, after.RevisionPolicy)
			}
		}},
		{"retry an ended job: running child on the same branch", "job", actionflow.ExecCancelled, control.Retry, "", func(t *testing.T, f fixture, before, after actionflow.Execution, r control.Record) {
			child := f.get(t, r.Child)
			if child.ParentID != before.ExecutionID || child.BranchID != before.BranchID || child.Status != actionflow.ExecRunning || child.Kind != "job" {
				t.Fatalf("child %+v", child)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			before := f.execution(t, "exe_1", tc.kind, tc.from)
			r, err := f.svc.Submit(ctx, "exe_1", cmd("cmd_1", tc.typ, before.Version, tc.payload), human)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != control.StatusApplied {
				t.Fatalf("record %+v", r)
			}
			after := f.get(t, "exe_1")
			if tc.typ != control.Fork && tc.typ != control.Retry {
				if after.LastCommand == nil || after.LastCommand.ID != "cmd_1" || r.ResultVersion != after.Version && tc.typ != control.Cancel {
					t.Fatalf("last command %+v, result version %d, execution version %d", after.LastCommand, r.ResultVersion, after.Version)
				}
			}
			tc.check(t, f, before, after, r)
			// The session's log has the command's accepted and applied events.
			evs, _ := f.p.Flow.ReadEvents(ctx, session, 0, 100)
			seen := map[string]bool{}
			for _, ev := range evs {
				seen[ev.Type] = true
			}
			if !seen["command.accepted"] || !seen["command.applied"] {
				t.Fatalf("events %v", seen)
			}
		})
	}
}

func TestSubmitRefusals(t *testing.T) {
	other := flowtest.Human("ses_other")
	agent := actionflow.Principal{Subject: "bot", Role: "agent", Session: session}
	cases := []struct {
		name   string
		kind   string
		status actionflow.ExecutionStatus
		c      control.Command
		by     actionflow.Principal
		check  func(t *testing.T, err error)
	}{
		{"stale expected version", "agent_chat", actionflow.ExecRunning, cmd("c", control.Pause, 7, ""), human, func(t *testing.T, err error) {
			var se *control.StaleVersionError
			if !errors.As(err, &se) || se.Expected != 7 || se.Actual != 1 || !errors.Is(err, store.ErrConflict) {
				t.Fatalf("got %v", err)
			}
		}},
		{"stale set_revision_policy", "agent_chat", actionflow.ExecRunning, cmd("c", control.SetRevisionPolicy, 3, `{"policy":"use_latest"}`), human, func(t *testing.T, err error) {
			var se *control.StaleVersionError
			if !errors.As(err, &se) || se.Expected != 3 || se.Actual != 1 {
				t.Fatalf("got %v", err)
			}
		}},
		{"an unknown revision policy", "agent_chat", actionflow.ExecRunning, cmd("c", control.SetRevisionPolicy, 1, `{"policy":"newest"}`), human, func(t *testing.T, err error) {
			var ve *actionflow.ValidationError
			if !errors.As(err, &ve) || ve.Field != "payload.policy" {
				t.Fatalf("got %v", err)
			}
		}},
		{"set_revision_policy of an ended execution", "agent_chat", actionflow.ExecCompleted, cmd("c", control.SetRevisionPolicy, 1, `{"policy":"use_latest"}`), human, func(t *testing.T, err error) {
			if !errors.As(err, new(*control.UnsupportedError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"an agent may not set the revision policy", "agent_chat", actionflow.ExecRunning, cmd("c", control.SetRevisionPolicy, 1, `{"policy":"use_latest"}`), agent, func(t *testing.T, err error) {
			if !errors.As(err, new(*actionflow.ForbiddenError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"pause of a paused execution", "agent_chat", actionflow.ExecPaused, cmd("c", control.Pause, 1, ""), human, func(t *testing.T, err error) {
			var ue *control.UnsupportedError
			if !errors.As(err, &ue) || ue.Reason != "the execution is already paused" {
				t.Fatalf("got %v", err)
			}
		}},
		{"step of a job", "job", actionflow.ExecPaused, cmd("c", control.Step, 1, ""), human, func(t *testing.T, err error) {
			if !errors.As(err, new(*control.UnsupportedError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"anything but fork while cancelling", "agent_chat", actionflow.ExecCancelling, cmd("c", control.Steer, 1, `{"instructions":"x"}`), human, func(t *testing.T, err error) {
			var ue *control.UnsupportedError
			if !errors.As(err, &ue) || ue.Status != actionflow.ExecCancelling {
				t.Fatalf("got %v", err)
			}
		}},
		{"an agent may not control", "agent_chat", actionflow.ExecRunning, cmd("c", control.Cancel, 1, ""), agent, func(t *testing.T, err error) {
			if !errors.As(err, new(*actionflow.ForbiddenError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"another session's execution is not visible", "agent_chat", actionflow.ExecRunning, cmd("c", control.Pause, 1, ""), other, func(t *testing.T, err error) {
			if !errors.As(err, new(*actionflow.NotFoundError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"a human may not send a system command", "agent_chat", actionflow.ExecRunning, cmd("c", control.Restart, 1, ""), human, func(t *testing.T, err error) {
			if !errors.As(err, new(*actionflow.ForbiddenError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"unknown payload field", "agent_chat", actionflow.ExecRunning, cmd("c", control.Pause, 1, `{"now":true}`), human, func(t *testing.T, err error) {
			var ve *actionflow.ValidationError
			if !errors.As(err, &ve) || ve.Field != "payload" {
				t.Fatalf("got %v", err)
			}
		}},
		{"fork from a saved point that does not exist", "agent_chat", actionflow.ExecRunning, cmd("c", control.Fork, 1, `{"checkpoint_version":3}`), human, func(t *testing.T, err error) {
			var spe *actionflow.SavedPointError
			if !errors.As(err, &spe) || spe.Requested != 3 || spe.Current != 0 {
				t.Fatalf("got %v", err)
			}
		}},
		{"fork of a cancelling execution", "agent_chat", actionflow.ExecCancelling, cmd("c", control.Fork, 1, ""), human, func(t *testing.T, err error) {
			var ue *control.UnsupportedError
			if !errors.As(err, &ue) || ue.Control != control.Fork {
				t.Fatalf("got %v", err)
			}
		}},
		{"missing expected version", "agent_chat", actionflow.ExecRunning, cmd("c", control.Pause, 0, ""), human, func(t *testing.T, err error) {
			var ve *actionflow.ValidationError
			if !errors.As(err, &ve) || ve.Field != "expected_version" {
				t.Fatalf("got %v", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.execution(t, "exe_1", tc.kind, tc.status)
			_, err := f.svc.Submit(ctx, "exe_1", tc.c, tc.by)
			tc.check(t, err)
			// A refused command is not saved.
			recs, _ := f.svc.Commands(ctx, "exe_1", control.SystemPrincipal)
			if len(recs) != 0 {
				t.Fatalf("refused command saved: %+v", recs)
			}
		})
	}
}

func TestControlsAdvertised(t *testing.T) {
	cases := []struct {
		kind   string
		status actionflow.ExecutionStatus
		want   []control.Control
	}{
		{"agent_chat", actionflow.ExecRunning, []control.Control{control.Pause, control.Steer, control.End, control.Cancel, control.Fork}},
		{"agent_chat", actionflow.ExecPaused, []control.Control{control.Continue, control.Step, control.Steer, control.End, control.Cancel, control.Fork}},
		{"agent_chat", actionflow.ExecCancelling, nil},
		{"agent_chat", actionflow.ExecCancelled, []control.Control{control.Fork, control.Retry}},
		{"agent_chat", actionflow.ExecCompleted, []control.Control{control.Fork, control.Retry}},
		{"job", actionflow.ExecRunning, []control.Control{control.Pause, control.End, control.Cancel}},
		{"job", actionflow.ExecPaused, []control.Control{control.Continue, control.End, control.Cancel}},
		{"job", actionflow.ExecFailed, []control.Control{control.Retry}},
		{"function", actionflow.ExecRunning, []control.Control{control.Pause, control.End, control.Cancel, control.Fork}},
	}
	for _, tc := range cases {
		t.Run(tc.kind+"_"+string(tc.status), func(t *testing.T) {
			got := control.Controls(actionflow.Execution{Kind: tc.kind, Status: tc.status})
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestRepeatedCommandID(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.execution(t, "exe_1", "agent_chat", actionflow.ExecRunning)
	first, err := f.svc.Submit(ctx, "exe_1", cmd("cmd_1", control.Pause, 1, ""), human)
	if err != nil || first.Status != control.StatusApplied {
		t.Fatal(first, err)
	}
	// The same command again (a retried request): the stored record, no
	// second application, even though the version moved on.
	again, err := f.svc.Submit(ctx, "exe_1", cmd("cmd_1", control.Pause, 1, ""), human)
	if err != nil || again.Status != control.StatusApplied || again.ResultVersion != first.ResultVersion {
		t.Fatal(again, err)
	}
	if e := f.get(t, "exe_1"); e.Version != first.ResultVersion {
		t.Fatalf("applied twice: version %d", e.Version)
	}
	// The same id for another command is a conflict carrying the stored one.
	var ce *actionflow.ConflictError
	if _, err := f.svc.Submit(ctx, "exe_1", cmd("cmd_1", control.Continue, 2, ""), human); !errors.As(err, &ce) || ce.Code != "command_id_reused" {
		t.Fatalf("reuse: %v", err)
	}
}

func TestOwnershipAndPrecedence(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w := f.p.World
	e := f.execution(t, "exe_1", "agent_chat", actionflow.ExecRunning)
	// Attempt A owns the execution: commands are saved, not applied.
	a, err := f.svc.Acquire(ctx, "exe_1", "att_a")
	if err != nil {
		t.Fatal(err)
	}
	pause, err := f.svc.Submit(ctx, "exe_1", cmd("cmd_pause", control.Pause, e.Version, ""), human)
	if err != nil || pause.Status != control.StatusAccepted {
		t.Fatalf("pause while owned: %+v %v", pause, err)
	}
	cancel, err := f.svc.Submit(ctx, "exe_1", cmd("cmd_cancel", control.Cancel, e.Version, ""), human)
	if err != nil || cancel.Status != control.StatusAccepted {
		t.Fatalf("cancel while owned: %+v %v", cancel, err)
	}
	if got := f.get(t, "exe_1"); got.Status != actionflow.ExecRunning {
		t.Fatalf("applied by a non-owner: %s", got.Status)
	}
	// A stalls past its lease; B takes over and applies: cancel first, and
	// the pause is refused because cancellation takes precedence.
	w.Clock.Advance(time.Minute)
	b, err := f.svc.Acquire(ctx, "exe_1", "att_b")
	if err != nil || b.Fence <= a.Fence {
		t.Fatalf("takeover: %+v %v", b, err)
	}
	// A's late application is refused: it no longer holds the lease.
	if _, err := f.svc.ApplyOwned(ctx, a); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("old owner applied: %v", err)
	}
	done, err := f.svc.ApplyOwned(ctx, b)
	if err != nil || len(done) != 2 {
		t.Fatalf("owner applied %+v %v", done, err)
	}
	if done[0].CommandID != "cmd_cancel" || done[0].Status != control.StatusApplied ||
		done[1].CommandID != "cmd_pause" || done[1].Status != control.StatusRejected {
		t.Fatalf("precedence: %+v", done)
	}
	after := f.get(t, "exe_1")
	if after.Status != actionflow.ExecCancelled || after.Fence != b.Fence {
		t.Fatalf("after: %s fence %d", after.Status, after.Fence)
	}
	// A's late write of the execution is rejected by the store (fenced).
	late := after
	late.Status = actionflow.ExecRunning
	var fe *store.FenceError
	if err := f.p.Flow.SaveExecution(ctx, &late, after.Version, a.Fence); !errors.As(err, &fe) {
		t.Fatalf("late write of an old owner: %v", err)
	}
}

func TestCompletionIsIdempotentWhenReconciliationWins(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	e := f.execution(t, "exe_1", "agent_chat", actionflow.ExecRunning)
	c := cmd("cmd_cancel", control.Cancel, e.Version, "")
	// The public submit, retried by the client, races the sweeper's reconciliation.
	var wg sync.WaitGroup
	recs := make([]control.Record, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Go(func() {
			if i%2 == 0 {
				recs[i], errs[i] = f.svc.Submit(ctx, "exe_1", c, human)
			} else {
				errs[i] = f.svc.Reconcile(ctx, "exe_1")
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	final, err := f.svc.Command(ctx, "exe_1", "cmd_cancel", human)
	if err != nil || final.Status != control.StatusApplied {
		t.Fatalf("final %+v %v", final, err)
	}
	for i := 0; i < 4; i += 2 {
		if recs[i].Status == control.StatusApplied && recs[i].ResultVersion != final.ResultVersion {
			t.Fatalf("caller %d saw result version %d, stored %d", i, recs[i].ResultVersion, final.ResultVersion)
		}
	}
	if got := f.get(t, "exe_1"); got.Status != actionflow.ExecCancelled {
		t.Fatalf("status %s", got.Status)
	}
}

// TestCancelStopsUnstartedWorkAndWaitsForStartedWork drives real actions
// through the engine double: one waiting for approval, one authorized but
// not yet dispatched, one running on a host.
func TestCancelStopsUnstartedWorkAndWaitsForStartedWork(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := f.p
	waiting, _ := p.Submit(ctx, session, "", flowtest.ToolAsk, `{"n":1}`)
	exec := waiting.ExecutionID
	running, _ := p.Submit(ctx, session, exec, flowtest.ToolHost, `{"n":2}`)
	queued, _ := p.Submit(ctx, session, exec, flowtest.ToolWrite, `{"n":3}`)
	// waiting: at its approval wait; running: claimed by a host (start
	// evidence) but no result yet; queued: authorized, not dispatched.
	for _, id := range []ids.ActionID{waiting.ActionID, running.ActionID} {
		if _, err := p.Engine.Run(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	task, err := p.Flow.HostStart(ctx, running.ActionID, "att_host")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Flow.Authorize(ctx, actionflow.StepInput{ActionID: queued.ActionID, ExecutionID: exec}); err != nil {
		t.Fatal(err)
	}
	e := f.get(t, exec)
	r, err := f.svc.Submit(ctx, exec, cmd("cmd_cancel", control.Cancel, e.Version, ""), human)
	if err != nil || r.Status != control.StatusApplied {
		t.Fatalf("cancel: %+v %v", r, err)
	}
	if got := f.get(t, exec); got.Status != actionflow.ExecCancelling {
		t.Fatalf("with a running action the execution is %s, want cancelling", got.Status)
	}
	ap, _ := p.Flow.GetApproval(ctx, waiting.ActionID)
	if ap.Status != actionflow.ApprovalCancelled {
		t.Fatalf("approval %s", ap.Status)
	}
	// The host finishes its started action; the engine runs everything out.
	if err := p.Flow.HostResult(ctx, running.ActionID, "att_host", task.Fence, p.World.Host.Run(running.ActionID)); err != nil {
		t.Fatal(err)
	}
	if err := p.Engine.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[ids.ActionID]lifecycle.Outcome{waiting.ActionID: lifecycle.OutcomeNotStarted, running.ActionID: lifecycle.OutcomeSucceeded, queued.ActionID: lifecycle.OutcomeNotStarted}
	for id, o := range want {
		rc, err := p.Flow.GetReceipt(ctx, id)
		if err != nil || rc.Outcome != o {
			t.Fatalf("%s: receipt %+v %v, want %s", id, rc, err, o)
		}
	}
	if p.World.Sync.Total() != 0 {
		t.Fatal("an action of a cancelled execution reached its executor")
	}
	// The sweeper's reconciliation confirms the end.
	if err := f.svc.Reconcile(ctx, exec); err != nil {
		t.Fatal(err)
	}
	if got := f.get(t, exec); got.Status != actionflow.ExecCancelled {
		t.Fatalf("after reconciliation: %s", got.Status)
	}
	// A late submission to the cancelled execution is refused, never run.
	late, _ := p.Submit(ctx, session, exec, flowtest.ToolWrite, `{"n":4}`)
	p.Engine.Drain(ctx)
	if rc, _ := p.Flow.GetReceipt(ctx, late.ActionID); rc.Outcome != lifecycle.OutcomeNotStarted || rc.ErrorCode != "permission_denied:execution_cancelled" {
		t.Fatalf("late action: %+v", rc)
	}
}

func TestStepAdmitsOneActionThenPauses(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := f.p
	first, _ := p.Submit(ctx, session, "", flowtest.ToolWrite, `{"n":0}`)
	exec := first.ExecutionID
	p.Engine.Drain(ctx)
	e := f.get(t, exec)
	if r, err := f.svc.Submit(ctx, exec, cmd("cmd_pause", control.Pause, e.Version, ""), human); err != nil || r.Status != control.StatusApplied {
		t.Fatal(r, err)
	}
	e = f.get(t, exec)
	if r, err := f.svc.Submit(ctx, exec, cmd("cmd_step", control.Step, e.Version, ""), human); err != nil || r.Status != control.StatusApplied {
		t.Fatal(r, err)
	}
	a1, _ := p.Submit(ctx, session, exec, flowtest.ToolWrite, `{"n":1}`)
	p.Engine.Drain(ctx)
	a2, _ := p.Submit(ctx, session, exec, flowtest.ToolWrite, `{"n":2}`)
	p.Engine.Drain(ctx)
	r1, _ := p.Flow.GetReceipt(ctx, a1.ActionID)
	r2, _ := p.Flow.GetReceipt(ctx, a2.ActionID)
	if r1.Outcome != lifecycle.OutcomeSucceeded || r2.Outcome != lifecycle.OutcomeNotStarted || r2.ErrorCode != "permission_denied:execution_paused" {
		t.Fatalf("step: %s, then %s (%s)", r1.Outcome, r2.Outcome, r2.ErrorCode)
	}
	if got := f.get(t, exec); got.Status != actionflow.ExecPaused || got.PauseReason != "step" {
		t.Fatalf("after the step: %s %q", got.Status, got.PauseReason)
	}
}

// hookStore runs a hook once, just before the first compare-and-swap of a
// command record: the moment an applier completes a command.
type hookStore struct {
	store.Store
	once sync.Once
	hook func()
}

func (h *hookStore) CompareAndSwap(ctx context.Context, it store.Item, expected, fence int64) error {
	if len(it.SK) > 4 && it.SK[:4] == "CMD#" {
		h.once.Do(h.hook)
	}
	return h.Store.CompareAndSwap(ctx, it, expected, fence)
}

// Transact: a command's completion is a compare-and-swap part beside its event.
func (h *hookStore) Transact(ctx context.Context, writes []store.Write) ([]int64, error) {
	for _, w := range writes {
		if w.CAS != nil && len(w.CAS.Item.SK) > 4 && w.CAS.Item.SK[:4] == "CMD#" {
			h.once.Do(h.hook)
		}
	}
	return h.Store.Transact(ctx, writes)
}

// TestReconciliationWinsTheCompletionRace interleaves the sweeper's
// reconciliation exactly between a cancellation's transition and its
// completion: the applier stalls past its lease, reconciliation takes over
// and completes the command, then the stalled applier completes it too.
// Both see the same applied record; nothing errors.
func TestReconciliationWinsTheCompletionRace(t *testing.T) {
	ctx := context.Background()
	w := flowtest.NewWorld(t)
	p := w.Start(t)
	hs := &hookStore{Store: p.Store}
	flow, err := actionflow.New(actionflow.Config{Store: hs, Clock: w.Clock.Now, Logger: w.Log})
	if err != nil {
		t.Fatal(err)
	}
	applier, _ := control.New(control.Config{Flow: flow, Logger: w.Log})
	sweeper, _ := control.New(control.Config{Flow: p.Flow, Logger: w.Log})
	e := actionflow.Execution{ExecutionID: "exe_1", SessionID: session, Kind: "agent_chat", Status: actionflow.ExecRunning}
	if err := p.Flow.PutExecution(ctx, &e); err != nil {
		t.Fatal(err)
	}
	var reconciled error
	hooked := false
	hs.hook = func() {
		hooked = true
		w.Clock.Advance(time.Minute) // the applier's lease lapses
		reconciled = sweeper.Reconcile(ctx, "exe_1")
	}
	r, err := applier.Submit(ctx, "exe_1", cmd("cmd_cancel", control.Cancel, 1, ""), human)
	if !hooked {
		t.Fatal("the reconciliation never ran between the transition and the completion")
	}
	if err != nil || reconciled != nil {
		t.Fatalf("submit: %v; reconcile: %v", err, reconciled)
	}
	stored, _ := sweeper.Command(ctx, "exe_1", "cmd_cancel", human)
	if r.Status != control.StatusApplied || stored.Status != control.StatusApplied || r.ResultVersion != stored.ResultVersion {
		t.Fatalf("submitter saw %+v, stored %+v", r, stored)
	}
	if got, _ := p.Flow.GetExecution(ctx, "exe_1"); got.Status != actionflow.ExecCancelled {
		t.Fatalf("status %s", got.Status)
	}
}
