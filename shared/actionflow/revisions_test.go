package actionflow_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/ids"
)

const revSession = ids.SessionID("ses_rev")

// revWorld is a world whose deployment runs revision A.
func revWorld(t *testing.T, policy string) (*flowtest.World, *flowtest.Revisions) {
	w := flowtest.NewWorld(t)
	w.Revisions, w.RevisionPolicy = flowtest.NewRevisions("rev_a"), policy
	return w, w.Revisions
}

func TestRevisionSelection(t *testing.T) {
	cases := []struct {
		name   string
		policy string
		// deploy changes the deployment between the first and second action.
		deploy func(r *flowtest.Revisions)
		// second is the revision the second action's machine starts on ("": none).
		second ids.RevisionID
		active ids.RevisionID
		status actionflow.ExecutionStatus
		reason string
	}{
		{"keep_original stays on A after B is deployed", actionflow.KeepOriginal,
			func(r *flowtest.Revisions) { r.SetLive("rev_b", "rev_a") }, "rev_a", "rev_a", actionflow.ExecRunning, ""},
		{"use_latest adopts a compatible B", actionflow.UseLatest,
			func(r *flowtest.Revisions) { r.SetLive("rev_b", "rev_a") }, "rev_b", "rev_b", actionflow.ExecRunning, ""},
		{"use_latest pauses on an incompatible B", actionflow.UseLatest,
			func(r *flowtest.Revisions) { r.SetLive("rev_b") }, "", "rev_a", actionflow.ExecPaused, actionflow.RevisionIncompatible},
		{"keep_original pauses when A is gone, never runs B", actionflow.KeepOriginal,
			func(r *flowtest.Revisions) { r.SetLive("rev_b", "rev_a"); r.Remove("rev_a") }, "", "rev_a", actionflow.ExecPaused, actionflow.RevisionUnavailable},
		{"use_latest pauses unavailable when the registry lost A, never adopts blindly", actionflow.UseLatest,
			func(r *flowtest.Revisions) { r.SetLive("rev_b", "rev_a"); r.Forget("rev_a") }, "", "rev_a", actionflow.ExecPaused, actionflow.RevisionUnavailable},
		{"use_latest with nothing new stays on A", actionflow.UseLatest,
			func(r *flowtest.Revisions) {}, "rev_a", "rev_a", actionflow.ExecRunning, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w, revs := revWorld(t, tc.policy)
			p := w.Start(t)
			first, err := p.Submit(ctx, revSession, "", flowtest.ToolWrite, `{"path":"a.txt"}`)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Engine.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			e, _ := p.Flow.GetExecution(ctx, first.ExecutionID)
			if e.StartedRevision != "rev_a" || e.ActiveRevision != "rev_a" || e.RevisionPolicy != tc.policy {
				t.Fatalf("new execution: started %q active %q policy %q", e.StartedRevision, e.ActiveRevision, e.RevisionPolicy)
			}
			tc.deploy(revs)
			second, err := p.Submit(ctx, revSession, first.ExecutionID, flowtest.ToolWrite, `{"path":"b.txt"}`)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Engine.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			var want []ids.RevisionID
			if tc.second != "" {
				want = []ids.RevisionID{tc.second}
			}
			if got := revs.StartedOn(second.ActionID); !slices.Equal(got, want) {
				t.Fatalf("second action started on %v, want %v", got, want)
			}
			e, _ = p.Flow.GetExecution(ctx, first.ExecutionID)
			if e.ActiveRevision != tc.active || e.StartedRevision != "rev_a" || e.Status != tc.status || e.PauseReason != tc.reason {
				t.Fatalf("execution: active %q started %q status %s reason %q", e.ActiveRevision, e.StartedRevision, e.Status, e.PauseReason)
			}
			if tc.reason != "" {
				b := e.RevisionBlock
				if b == nil || b.Reason != tc.reason || len(b.Differences) == 0 || !slices.Contains(b.Held, second.ActionID) {
					t.Fatalf("revision block %+v", b)
				}
			}
			// Provenance: the first receipt keeps A whatever came after, and
			// it is never recomputed.
			rc, err := p.Flow.GetReceipt(ctx, first.ActionID)
			if err != nil || rc.Revision != "rev_a" {
				t.Fatalf("first receipt revision %q, %v", rc.Revision, err)
			}
			if tc.second != "" {
				rc2, err := p.Flow.GetReceipt(ctx, second.ActionID)
				if err != nil || rc2.Revision != tc.second {
					t.Fatalf("second receipt revision %q, %v", rc2.Revision, err)
				}
				ck, _ := p.Flow.GetCheckpoint(ctx, first.ExecutionID)
				if ck.Revision != tc.second {
					t.Fatalf("checkpoint revision %q", ck.Revision)
				}
			}
			if n := w.Sync.Calls()[first.ActionID]; n != 1 {
				t.Fatalf("the first action ran %d times", n)
			}
		})
	}
}

// An adopted revision is retained: a later keep_original selection keeps
// it (it does not go back to the started one).
func TestAdoptedRevisionIsRetained(t *testing.T) {
	ctx := context.Background()
	w, revs := revWorld(t, actionflow.UseLatest)
	p := w.Start(t)
	first, err := p.Submit(ctx, revSession, "", flowtest.ToolWrite, `{"path":"a.txt"}`)
	if err != nil {
		t.Fatal(err)
	}
	p.Engine.Drain(ctx)
	revs.SetLive("rev_b", "rev_a")
	if _, err := p.Submit(ctx, revSession, first.ExecutionID, flowtest.ToolWrite, `{"path":"b.txt"}`); err != nil {
		t.Fatal(err)
	}
	p.Engine.Drain(ctx)
	e, _ := p.Flow.GetExecution(ctx, first.ExecutionID)
	if e.ActiveRevision != "rev_b" {
		t.Fatalf("not adopted: %q", e.ActiveRevision)
	}
	e.RevisionPolicy = actionflow.KeepOriginal
	if err := p.Flow.SaveExecution(ctx, &e, e.Version, 0); err != nil {
		t.Fatal(err)
	}
	revs.SetLive("rev_c", "rev_a", "rev_b")
	third, err := p.Submit(ctx, revSession, first.ExecutionID, flowtest.ToolWrite, `{"path":"c.txt"}`)
	if err != nil {
		t.Fatal(err)
	}
	p.Engine.Drain(ctx)
	if got := revs.StartedOn(third.ActionID); !slices.Equal(got, []ids.RevisionID{"rev_b"}) {
		t.Fatalf("third action started on %v, want the adopted rev_b", got)
	}
	evs, _ := p.Flow.ReadEvents(ctx, revSession, 0, 1000)
	adopted := 0
	for _, ev := range evs {
		if ev.Type == "execution.revision_adopted" && strings.Contains(string(ev.Data), `"to":"rev_b"`) {
			adopted++
		}
	}
	if adopted != 1 {
		t.Fatalf("%d execution.revision_adopted events to rev_b", adopted)
	}
}

// An approval opened under A and approved after B was deployed: the
// approval boundary selects the revision again.
func TestApprovalBoundarySelectsRevision(t *testing.T) {
	cases := []struct {
		name     string
		policy   string
		resumes  []ids.RevisionID // what B can resume
		machines []ids.RevisionID // the revisions the action's machines ran on, in order
		receipt  ids.RevisionID   // "": none (held)
		status   actionflow.ExecutionStatus
	}{
		{"keep_original finishes on A", actionflow.KeepOriginal, []ids.RevisionID{"rev_a"}, []ids.RevisionID{"rev_a"}, "rev_a", actionflow.ExecRunning},
		{"use_latest hands the approved action off to B", actionflow.UseLatest, []ids.RevisionID{"rev_a"}, []ids.RevisionID{"rev_a", "rev_b"}, "rev_b", actionflow.ExecRunning},
		{"use_latest with an incompatible B holds it paused", actionflow.UseLatest, nil, []ids.RevisionID{"rev_a"}, "", actionflow.ExecPaused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w, revs := revWorld(t, tc.policy)
			p := w.Start(t)
			a, err := p.Submit(ctx, revSession, "", flowtest.ToolAsk, `{"path":"a.txt"}`)
			if err != nil {
				t.Fatal(err)
			}
			p.Engine.Drain(ctx)
			revs.SetLive("rev_b", tc.resumes...)
			p = w.Start(t) // the restart with B
			if n, err := p.DecidePending(ctx, revSession, actionflow.DecisionApprove); err != nil || n != 1 {
				t.Fatalf("decided %d: %v", n, err)
			}
			if err := p.Engine.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			var ran []ids.RevisionID
			ran = append(ran, revs.StartedOn(a.ActionID)...)
			ran = append(ran, revs.StartedOn(ids.ActionID(string(a.ActionID)+"-r1"))...)
			if !slices.Equal(ran, tc.machines) {
				t.Fatalf("machines on %v, want %v", ran, tc.machines)
			}
			rc, err := p.Flow.GetReceipt(ctx, a.ActionID)
			if tc.receipt == "" {
				if err == nil {
					t.Fatalf("a held action has a receipt %+v", rc)
				}
			} else if err != nil || rc.Revision != tc.receipt || w.Sync.Calls()[a.ActionID] != 1 {
				t.Fatalf("receipt %+v %v, executor calls %d", rc, err, w.Sync.Calls()[a.ActionID])
			}
			e, _ := p.Flow.GetExecution(ctx, a.ExecutionID)
			if e.Status != tc.status {
				t.Fatalf("execution %s (%s)", e.Status, e.PauseReason)
			}
			if len(tc.machines) == 2 {
				// A's machine was stopped at its wait, before it revalidated.
				if st, _ := p.Engine.Status(ctx, a.ActionID); st != flowtest.Aborted {
					t.Fatalf("A's machine is %s", st)
				}
				if e.ActiveRevision != "rev_b" {
					t.Fatalf("active revision %q", e.ActiveRevision)
				}
			}
			if tc.status == actionflow.ExecPaused {
				if e.RevisionBlock == nil || e.RevisionBlock.Reason != actionflow.RevisionIncompatible || !slices.Contains(e.RevisionBlock.Held, a.ActionID) {
					t.Fatalf("block %+v", e.RevisionBlock)
				}
				// The sweeper's resend of the durable decision does not run it on A either.
				if sent, err := p.Flow.ResendDecision(ctx, a.ActionID); sent || err != nil {
					t.Fatalf("resend while blocked: %v %v", sent, err)
				}
				p.Engine.Drain(ctx)
				if st, _ := p.Engine.State(ctx, a.ActionID); st != "AwaitApproval" {
					t.Fatalf("A's machine moved on to %s", st)
				}
			}
		})
	}
}
