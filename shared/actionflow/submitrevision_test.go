package actionflow_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// deployAfterSubmit runs deploy once, right after the next action.submitted
// transaction commits: between a submission and its machine's start.
type deployAfterSubmit struct {
	store.Store
	armed  atomic.Bool
	deploy func()
}

func (d *deployAfterSubmit) Transact(ctx context.Context, writes []store.Write) ([]int64, error) {
	seqs, err := d.Store.Transact(ctx, writes)
	if err == nil && d.armed.Load() {
		for _, w := range writes {
			if w.Append != nil && strings.Contains(string(w.Append.Body), "action.submitted") && d.armed.CompareAndSwap(true, false) {
				d.deploy()
			}
		}
	}
	return seqs, err
}

// TestRevisionRecordedAtSubmit: a running keep_original execution's next
// action gets its revision (the active one) in the submission's
// transaction, so its start writes nothing; a deployment between the
// submission and the start changes nothing under keep_original, and under
// use_latest (no revision at submission) the start selects and adopts it.
// The receipt names the revision the machine really started on.
func TestRevisionRecordedAtSubmit(t *testing.T) {
	cases := []struct {
		name   string
		policy string
		deploy func(r *flowtest.Revisions)
		// started: the revision the second machine starts on ("": none, held).
		started ids.RevisionID
		// version: the second action's version once Submit returned (1: the
		// start wrote nothing).
		version int64
	}{
		{"keep_original: recorded at submit, B deployed before the start", actionflow.KeepOriginal,
			func(r *flowtest.Revisions) { r.SetLive("rev_b", "rev_a") }, "rev_a", 1},
		{"keep_original: nothing deployed", actionflow.KeepOriginal,
			func(r *flowtest.Revisions) {}, "rev_a", 1},
		{"use_latest: B deployed before the start is adopted", actionflow.UseLatest,
			func(r *flowtest.Revisions) { r.SetLive("rev_b", "rev_a") }, "rev_b", 2},
		{"use_latest: nothing deployed, the start records A", actionflow.UseLatest,
			func(r *flowtest.Revisions) {}, "rev_a", 2},
		{"keep_original: A removed before the start, held and cleared", actionflow.KeepOriginal,
			func(r *flowtest.Revisions) { r.SetLive("rev_b", "rev_a"); r.Remove("rev_a") }, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w, revs := revWorld(t, tc.policy)
			d := &deployAfterSubmit{deploy: func() { tc.deploy(revs) }}
			w.Wrap = func(st store.Store) store.Store { d.Store = st; return d }
			p := w.Start(t)
			first, err := p.Submit(ctx, revSession, "", flowtest.ToolWrite, `{"path":"a.txt"}`)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Engine.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			d.armed.Store(true)
			second, err := p.Submit(ctx, revSession, first.ExecutionID, flowtest.ToolWrite, `{"path":"b.txt"}`)
			if err != nil {
				t.Fatal(err)
			}
			if d.armed.Load() {
				t.Fatal("the deployment did not happen between submission and start")
			}
			a, err := p.Flow.GetAction(ctx, second.ActionID)
			if err != nil || a.Revision != tc.started || (tc.version != 0 && a.Version != tc.version) {
				t.Fatalf("second action after submit: revision %q version %d %v, want %q and %d", a.Revision, a.Version, err, tc.started, tc.version)
			}
			if err := p.Engine.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			var want []ids.RevisionID
			if tc.started != "" {
				want = []ids.RevisionID{tc.started}
			}
			if got := revs.StartedOn(second.ActionID); !slices.Equal(got, want) {
				t.Fatalf("second action started on %v, want %v", got, want)
			}
			if tc.started == "" {
				e, _ := p.Flow.GetExecution(ctx, first.ExecutionID)
				if e.Status != actionflow.ExecPaused || e.PauseReason != actionflow.RevisionUnavailable || e.RevisionBlock == nil ||
					!slices.Contains(e.RevisionBlock.Held, second.ActionID) {
					t.Fatalf("execution %s %q block %+v", e.Status, e.PauseReason, e.RevisionBlock)
				}
				return
			}
			rc, err := p.Flow.GetReceipt(ctx, second.ActionID)
			if err != nil || rc.Revision != tc.started {
				t.Fatalf("second receipt revision %q, %v", rc.Revision, err)
			}
		})
	}
}
