package control_test

import (
	"context"
	"slices"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
)

// An incompatible use_latest pauses the execution and holds the action;
// changing the policy starts nothing; Continue starts the held action on
// the revision selected then (here keep_original: the active one).
func TestRevisionBlockHeldUntilContinue(t *testing.T) {
	ctx := context.Background()
	w := flowtest.NewWorld(t)
	w.Revisions, w.RevisionPolicy = flowtest.NewRevisions("rev_a"), actionflow.UseLatest
	p := w.Start(t)
	svc, err := control.New(control.Config{Flow: p.Flow, Logger: w.Log})
	if err != nil {
		t.Fatal(err)
	}
	first, err := p.Submit(ctx, session, "", flowtest.ToolWrite, `{"path":"a.txt"}`)
	if err != nil {
		t.Fatal(err)
	}
	p.Engine.Drain(ctx)
	w.Revisions.SetLive("rev_b") // resumes nothing older
	held, err := p.Submit(ctx, session, first.ExecutionID, flowtest.ToolWrite, `{"path":"b.txt"}`)
	if err != nil {
		t.Fatal(err)
	}
	p.Engine.Drain(ctx)
	e := f(t, p, first.ExecutionID)
	if e.Status != actionflow.ExecPaused || e.PauseReason != actionflow.RevisionIncompatible || len(w.Revisions.StartedOn(held.ActionID)) != 0 {
		t.Fatalf("not blocked: %s %q, started on %v", e.Status, e.PauseReason, w.Revisions.StartedOn(held.ActionID))
	}
	r, err := svc.Submit(ctx, e.ExecutionID, cmd("cmd_policy", control.SetRevisionPolicy, e.Version, `{"policy":"keep_original"}`), human)
	if err != nil || r.Status != control.StatusApplied {
		t.Fatalf("set policy: %+v %v", r, err)
	}
	p.Engine.Drain(ctx)
	if got := w.Revisions.StartedOn(held.ActionID); len(got) != 0 {
		t.Fatalf("a policy change started the held action on %v", got)
	}
	e = f(t, p, first.ExecutionID)
	if e.Status != actionflow.ExecPaused || e.RevisionPolicy != actionflow.KeepOriginal {
		t.Fatalf("after the policy change: %s %q", e.Status, e.RevisionPolicy)
	}
	if r, err = svc.Submit(ctx, e.ExecutionID, cmd("cmd_continue", control.Continue, e.Version, ""), human); err != nil || r.Status != control.StatusApplied {
		t.Fatalf("continue: %+v %v", r, err)
	}
	p.Engine.Drain(ctx)
	if got := w.Revisions.StartedOn(held.ActionID); !slices.Equal(got, []ids.RevisionID{"rev_a"}) {
		t.Fatalf("held action started on %v, want rev_a", got)
	}
	if rc, err := p.Flow.GetReceipt(ctx, held.ActionID); err != nil || rc.Revision != "rev_a" {
		t.Fatalf("held action's receipt %+v %v", rc, err)
	}
	e = f(t, p, first.ExecutionID)
	if e.Status != actionflow.ExecRunning || e.RevisionBlock != nil || e.ActiveRevision != "rev_a" {
		t.Fatalf("after continue: %s block %+v active %q", e.Status, e.RevisionBlock, e.ActiveRevision)
	}
}

func f(t *testing.T, p *flowtest.Process, id ids.ExecutionID) actionflow.Execution {
	t.Helper()
	e, err := p.Flow.GetExecution(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
