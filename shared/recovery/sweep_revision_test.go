package recovery_test

import (
	"context"
	"slices"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/recovery"
	"github.com/openprogram/lifecycle/shared/store"
)

// Issue 15: an action whose machine never started is started by the
// sweeper on the revision its execution's policy selects; when that
// selection is blocked (an incompatible revision under use_latest) the
// action is held, not started, and the report says so. Before the fix
// the sweeper reported "started" for it.
func TestSweepReportsARevisionHoldNotAStart(t *testing.T) {
	cases := []struct {
		name string
		// lost: the second action's start was lost before its revision
		// was recorded (a crash); otherwise it was submitted normally.
		lost bool
		// deploy happens before the second action is submitted (early)
		// or after, before the restart.
		early   bool
		resumes []ids.RevisionID // what the new revision can resume
		did     recovery.Did
		held    bool
		started []ids.RevisionID // revisions the second action's machine started on
	}{
		{"start lost, an incompatible revision deployed: held", true, false, nil, recovery.Held, true, nil},
		{"held at submit already: nothing changes", false, true, nil, recovery.Left, true, nil},
		{"start lost, a compatible revision deployed: started on it", true, false, []ids.RevisionID{"rev_a"}, recovery.Started, false, []ids.RevisionID{"rev_b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := &fixture{w: flowtest.NewWorld(t)}
			revs := flowtest.NewRevisions("rev_a")
			f.w.Revisions, f.w.RevisionPolicy = revs, actionflow.UseLatest
			f.w.Wrap = func(s store.Store) store.Store {
				f.faulty = &flowtest.FaultyStore{Store: s}
				return f.faulty
			}
			f.start(t)
			first := f.submit(t, flowtest.ToolWrite)
			f.drain(t)
			if tc.early {
				revs.SetLive("rev_b", tc.resumes...)
			}
			if tc.lost {
				f.faulty.Set(failing("cas", `"revision":"rev_a"`, "ACTION#"))
			}
			second, err := f.p.Submit(ctx, session, first.ExecutionID, flowtest.ToolWrite, `{"v":2}`)
			if second.ActionID == "" || (err == nil) == tc.lost {
				t.Fatalf("submit: %+v %v", second, err)
			}
			f.faulty.Set(nil)
			if !tc.early {
				revs.SetLive("rev_b", tc.resumes...)
			}
			f.start(t) // a restart sweeps
			rep, err := f.sw.SweepAction(ctx, second.ActionID)
			if err != nil || rep.Did != tc.did {
				t.Fatalf("sweep: %+v %v, want %s", rep, err, tc.did)
			}
			f.drain(t)
			if got := revs.StartedOn(second.ActionID); !slices.Equal(got, tc.started) {
				t.Fatalf("the action's machine started on %v, want %v", got, tc.started)
			}
			e, err := f.p.Flow.GetExecution(ctx, first.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			held := e.Status == actionflow.ExecPaused && e.RevisionBlock != nil && slices.Contains(e.RevisionBlock.Held, second.ActionID)
			if held != tc.held {
				t.Fatalf("execution %s block %+v, held %v want %v", e.Status, e.RevisionBlock, held, tc.held)
			}
			if a, _ := f.p.Flow.GetAction(ctx, second.ActionID); tc.held && (a.Start != nil || a.States.Started) {
				t.Fatalf("a held action has start evidence: %+v", a.States)
			}
			// Sweeping again reports no change for a held action.
			again, err := f.sw.SweepAction(ctx, second.ActionID)
			if err != nil || again.Did != recovery.Left {
				t.Fatalf("second sweep: %+v %v", again, err)
			}
		})
	}
}
