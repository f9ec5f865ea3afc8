package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

var agent = actionflow.Principal{Subject: "bot", Role: "agent", Session: session}

func TestEndEndsAnExecution(t *testing.T) {
	cases := []struct {
		name    string
		kind    string
		from    actionflow.ExecutionStatus
		by      actionflow.Principal
		payload string
		want    actionflow.EndInfo
	}{
		{"the agent completes its running execution", "agent_chat", actionflow.ExecRunning, agent, `{"status":"completed","message":"done"}`,
			actionflow.EndInfo{Status: actionflow.ExecCompleted, Message: "done", By: "agent"}},
		{"the agent fails it with a reason", "agent_chat", actionflow.ExecRunning, agent, `{"status":"failed","reason":"model_error","message":"HTTP 500"}`,
			actionflow.EndInfo{Status: actionflow.ExecFailed, Reason: "model_error", Message: "HTTP 500", By: "agent"}},
		{"a human ends a paused job", "job", actionflow.ExecPaused, human, `{"status":"failed","reason":"aborted"}`,
			actionflow.EndInfo{Status: actionflow.ExecFailed, Reason: "aborted", By: "human"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			before := f.execution(t, "exe_1", tc.kind, tc.from)
			r, err := f.svc.Submit(ctx, "exe_1", cmd("cmd_end", control.End, before.Version, tc.payload), tc.by)
			if err != nil || r.Status != control.StatusApplied {
				t.Fatalf("end: %+v %v", r, err)
			}
			after := f.get(t, "exe_1")
			if after.Status != tc.want.Status || after.End == nil || after.PauseOwner != "" || after.StepBudget != 0 || r.ResultVersion != after.Version {
				t.Fatalf("after end: %+v", after)
			}
			got := *after.End
			if got.At.IsZero() {
				t.Fatal("end without a time")
			}
			got.At = time.Time{}
			if got != tc.want {
				t.Fatalf("end %+v, want %+v", got, tc.want)
			}
			evs, _ := f.p.Flow.ReadEvents(ctx, session, 0, 100)
			ended := 0
			for _, ev := range evs {
				if ev.Type == "execution.ended" && ev.ExecutionID == "exe_1" {
					ended++
				}
			}
			if ended != 1 {
				t.Fatalf("%d execution.ended events", ended)
			}
			if after.Status.Open() {
				t.Fatal("an ended execution is still in the open index")
			}
			if cs := control.Controls(after); len(cs) != 2 || cs[0] != control.Fork || cs[1] != control.Retry {
				if tc.kind != "job" || len(cs) != 1 || cs[0] != control.Retry {
					t.Fatalf("controls after the end: %v", cs)
				}
			}
		})
	}
}

func TestEndRefusals(t *testing.T) {
	otherAgent := actionflow.Principal{Subject: "bot2", Role: "agent", Session: "ses_other"}
	completed := `{"status":"completed"}`
	cases := []struct {
		name   string
		status actionflow.ExecutionStatus
		c      control.Command
		by     actionflow.Principal
		check  func(t *testing.T, err error)
	}{
		{"another session's agent", actionflow.ExecRunning, cmd("c", control.End, 1, completed), otherAgent, func(t *testing.T, err error) {
			if !errors.As(err, new(*actionflow.NotFoundError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"an agent still may not pause", actionflow.ExecRunning, cmd("c", control.Pause, 1, ""), agent, func(t *testing.T, err error) {
			if !errors.As(err, new(*actionflow.ForbiddenError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"an agent still may not steer", actionflow.ExecRunning, cmd("c", control.Steer, 1, `{"instructions":"x"}`), agent, func(t *testing.T, err error) {
			if !errors.As(err, new(*actionflow.ForbiddenError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"an agent may not send a system command", actionflow.ExecRunning, cmd("c", control.Shutdown, 1, ""), agent, func(t *testing.T, err error) {
			if !errors.As(err, new(*actionflow.ForbiddenError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"cancellation takes precedence", actionflow.ExecCancelling, cmd("c", control.End, 1, completed), agent, func(t *testing.T, err error) {
			var ue *control.UnsupportedError
			if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "cancellation takes precedence") {
				t.Fatalf("got %v", err)
			}
		}},
		{"already ended", actionflow.ExecCompleted, cmd("c", control.End, 1, `{"status":"failed","reason":"aborted"}`), human, func(t *testing.T, err error) {
			var ue *control.UnsupportedError
			if !errors.As(err, &ue) || ue.Reason != "the execution has ended (completed)" {
				t.Fatalf("got %v", err)
			}
		}},
		{"stale version", actionflow.ExecRunning, cmd("c", control.End, 2, completed), agent, func(t *testing.T, err error) {
			if !errors.As(err, new(*control.StaleVersionError)) {
				t.Fatalf("got %v", err)
			}
		}},
		{"failed without a reason", actionflow.ExecRunning, cmd("c", control.End, 1, `{"status":"failed"}`), agent, fieldError("payload.reason")},
		{"reason that is not a code", actionflow.ExecRunning, cmd("c", control.End, 1, `{"status":"failed","reason":"Bad Thing"}`), agent, fieldError("payload.reason")},
		{"status that is not an end", actionflow.ExecRunning, cmd("c", control.End, 1, `{"status":"cancelled"}`), agent, fieldError("payload.status")},
		{"no payload", actionflow.ExecRunning, cmd("c", control.End, 1, ""), agent, fieldError("payload.status")},
		{"message too long", actionflow.ExecRunning, cmd("c", control.End, 1, `{"status":"completed","message":"`+strings.Repeat("x", control.MaxEndMessageBytes+1)+`"}`), agent, fieldError("payload.message")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.execution(t, "exe_1", "agent_chat", tc.status)
			_, err := f.svc.Submit(ctx, "exe_1", tc.c, tc.by)
			tc.check(t, err)
			if recs, _ := f.svc.Commands(ctx, "exe_1", control.SystemPrincipal); len(recs) != 0 {
				t.Fatalf("refused command saved: %+v", recs)
			}
			if got := f.get(t, "exe_1"); got.Status != tc.status || got.End != nil {
				t.Fatalf("refused command changed the execution: %+v", got)
			}
		})
	}
}

func fieldError(field string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		var ve *actionflow.ValidationError
		if !errors.As(err, &ve) || ve.Field != field {
			t.Fatalf("got %v, want a validation error of %s", err, field)
		}
	}
}

// An End and a Cancel wait for the owner: the cancellation is applied
// first and the End is rejected (cancellation takes precedence).
func TestCancelWinsOverEnd(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	e := f.execution(t, "exe_1", "agent_chat", actionflow.ExecRunning)
	a, err := f.svc.Acquire(ctx, "exe_1", "att_a")
	if err != nil {
		t.Fatal(err)
	}
	end, err := f.svc.Submit(ctx, "exe_1", cmd("cmd_end", control.End, e.Version, `{"status":"completed"}`), agent)
	if err != nil || end.Status != control.StatusAccepted {
		t.Fatalf("end while owned: %+v %v", end, err)
	}
	cancel, err := f.svc.Submit(ctx, "exe_1", cmd("cmd_cancel", control.Cancel, e.Version, ""), human)
	if err != nil || cancel.Status != control.StatusAccepted {
		t.Fatalf("cancel while owned: %+v %v", cancel, err)
	}
	done, err := f.svc.ApplyOwned(ctx, a)
	if err != nil || len(done) != 2 {
		t.Fatalf("applied %+v %v", done, err)
	}
	if done[0].CommandID != "cmd_cancel" || done[0].Status != control.StatusApplied ||
		done[1].CommandID != "cmd_end" || done[1].Status != control.StatusRejected || !strings.Contains(done[1].Reason, "cancellation takes precedence") {
		t.Fatalf("precedence: %+v", done)
	}
	if after := f.get(t, "exe_1"); after.Status != actionflow.ExecCancelled || after.End != nil {
		t.Fatalf("after: %+v", after)
	}
}

// Ending an execution closes its unstarted actions (a pending approval is
// cancelled), lets a started one finish and record, and refuses new ones
// with execution_ended.
func TestEndClosesUnstartedWorkAndRefusesNewWork(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := f.p
	waiting, _ := p.Submit(ctx, session, "", flowtest.ToolAsk, `{"n":1}`)
	exec := waiting.ExecutionID
	running, _ := p.Submit(ctx, session, exec, flowtest.ToolHost, `{"n":2}`)
	for _, id := range []ids.ActionID{waiting.ActionID, running.ActionID} {
		if _, err := p.Engine.Run(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	task, err := p.Flow.HostStart(ctx, running.ActionID, "att_host")
	if err != nil {
		t.Fatal(err)
	}
	e := f.get(t, exec)
	r, err := f.svc.Submit(ctx, exec, cmd("cmd_end", control.End, e.Version, `{"status":"failed","reason":"aborted","message":"user left"}`), agent)
	if err != nil || r.Status != control.StatusApplied {
		t.Fatalf("end: %+v %v", r, err)
	}
	if got := f.get(t, exec); got.Status != actionflow.ExecFailed {
		t.Fatalf("after end: %s", got.Status)
	}
	if ap, _ := p.Flow.GetApproval(ctx, waiting.ActionID); ap.Status != actionflow.ApprovalCancelled {
		t.Fatalf("approval %s", ap.Status)
	}
	if err := p.Flow.HostResult(ctx, running.ActionID, "att_host", task.Fence, p.World.Host.Run(running.ActionID)); err != nil {
		t.Fatal(err)
	}
	late, _ := p.Submit(ctx, session, exec, flowtest.ToolWrite, `{"n":3}`)
	if err := p.Engine.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[ids.ActionID]string{waiting.ActionID: "not_started", running.ActionID: "succeeded", late.ActionID: "not_started"}
	for id, o := range want {
		rc, err := p.Flow.GetReceipt(ctx, id)
		if err != nil || string(rc.Outcome) != o {
			t.Fatalf("%s: receipt %+v %v, want %s", id, rc, err, o)
		}
	}
	rc, _ := p.Flow.GetReceipt(ctx, late.ActionID)
	a, _ := p.Flow.GetAction(ctx, late.ActionID)
	if rc.ErrorCode != "permission_denied:execution_ended" || a.Decision == nil || a.Decision.Reason.Detail != "the execution has ended (failed: aborted)" {
		t.Fatalf("late action: %+v %+v", rc, a.Decision)
	}
	if a.States.Outcome != lifecycle.OutcomeNotStarted || p.World.Sync.Total() != 0 {
		t.Fatal("work of an ended execution reached its executor")
	}
}
