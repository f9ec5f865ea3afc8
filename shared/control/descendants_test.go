package control_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// tree is a cancelled execution's family:
//
//	P (running)
//	├── F   fork of P (paused by fork)
//	│   └── G   fork of F (paused by fork)
//	├── J   child task of P (job, running)
//	├── D   child task of P, completed   (left alone)
//	└── E   fork of P, ended failed       (left alone)
//	    └── R   retry of E (paused by fork)
type tree struct{ P, F, G, J, D, E, R ids.ExecutionID }

func (f fixture) submitOK(t *testing.T, exec ids.ExecutionID, c control.Command) control.Record {
	t.Helper()
	r, err := f.svc.Submit(context.Background(), exec, c, human)
	if err != nil || r.Status != control.StatusApplied {
		t.Fatalf("%s %s on %s: %+v %v", c.Type, c.ID, exec, r, err)
	}
	return r
}

func (f fixture) family(t *testing.T) tree {
	t.Helper()
	ctx := context.Background()
	var tr tree
	tr.P = f.execution(t, "exe_p", "agent_chat", actionflow.ExecRunning).ExecutionID
	tr.F = f.submitOK(t, tr.P, cmd("fork_f", control.Fork, 1, "")).Child
	tr.G = f.submitOK(t, tr.F, cmd("fork_g", control.Fork, 1, "")).Child
	j, err := f.p.Flow.StartChildTask(ctx, tr.P, actionflow.ChildTask{ExecutionID: "exe_j", Kind: "job"})
	if err != nil {
		t.Fatal(err)
	}
	tr.J = j.ExecutionID
	d, err := f.p.Flow.StartChildTask(ctx, tr.P, actionflow.ChildTask{ExecutionID: "exe_d", Kind: "function"})
	if err != nil {
		t.Fatal(err)
	}
	tr.D = d.ExecutionID
	f.submitOK(t, tr.D, cmd("end_d", control.End, 1, `{"status":"completed"}`))
	tr.E = f.submitOK(t, tr.P, cmd("fork_e", control.Fork, 1, "")).Child
	f.submitOK(t, tr.E, cmd("end_e", control.End, 1, `{"status":"failed","reason":"model_error"}`))
	e := f.get(t, tr.E)
	tr.R = f.submitOK(t, tr.E, cmd("retry_r", control.Retry, e.Version, "")).Child
	return tr
}

func reachedIDs(r control.Record) []string {
	var out []string
	for _, d := range r.Descendants {
		out = append(out, fmt.Sprintf("%s<%s@%d:%s", d.ExecutionID, d.ParentID, d.Depth, d.Status))
	}
	sort.Strings(out)
	return out
}

// TestCancelReachesDescendants: a Cancel ends the selected execution and
// its open descendants (forks, retries, child tasks, recursively), each by
// a Cancel of its own saved through the command service under a derived
// id; ended descendants are left alone (a retry below one is reached); a
// repeated or second Cancel sends nothing again.
func TestCancelReachesDescendants(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tr := f.family(t)
	root := f.submitOK(t, tr.P, cmd("cancel_p", control.Cancel, 1, `{"reason":"stop everything"}`))

	want := []string{
		string(tr.F) + "<" + string(tr.P) + "@1:applied",
		string(tr.G) + "<" + string(tr.F) + "@2:applied",
		string(tr.J) + "<" + string(tr.P) + "@1:applied",
		string(tr.R) + "<" + string(tr.E) + "@2:applied",
	}
	sort.Strings(want)
	if got := reachedIDs(root); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("reached %v, want %v", got, want)
	}
	cases := []struct {
		name string
		id   ids.ExecutionID
		want actionflow.ExecutionStatus
		// parent and cancel: the derived Cancel it got (none when left alone)
		parent ids.ExecutionID
		cancel ids.CommandID
	}{
		{"the cancelled execution", tr.P, actionflow.ExecCancelled, "", ""},
		{"a fork", tr.F, actionflow.ExecCancelled, tr.P, "cancel_p"},
		{"a fork of the fork", tr.G, actionflow.ExecCancelled, tr.F, control.DescendantCancelID(tr.P, "cancel_p", tr.F)},
		{"a child task", tr.J, actionflow.ExecCancelled, tr.P, "cancel_p"},
		{"a completed child task is left alone", tr.D, actionflow.ExecCompleted, "", ""},
		{"a failed fork is left alone", tr.E, actionflow.ExecFailed, "", ""},
		{"the retry of the failed fork", tr.R, actionflow.ExecCancelled, tr.E, "cancel_p"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := f.get(t, tc.id); got.Status != tc.want {
				t.Fatalf("%s is %s, want %s", tc.id, got.Status, tc.want)
			}
			if tc.cancel == "" {
				return
			}
			id := control.DescendantCancelID(tc.parent, tc.cancel, tc.id)
			r, err := f.svc.Command(ctx, tc.id, id, human)
			if err != nil || r.Status != control.StatusApplied || r.Type != control.Cancel || r.Cascade == nil || r.Principal != human {
				t.Fatalf("derived cancel %s: %+v %v", id, r, err)
			}
		})
	}
	// The same Cancel again, and another Cancel of the cancelled
	// execution: nothing new is sent to any descendant.
	if again := f.submitOK(t, tr.P, cmd("cancel_p", control.Cancel, 1, `{"reason":"stop everything"}`)); strings.Join(reachedIDs(again), ",") != strings.Join(want, ",") {
		t.Fatalf("repeat: %v", reachedIDs(again))
	}
	f.submitOK(t, tr.P, cmd("cancel_p2", control.Cancel, 1, ""))
	for _, id := range []ids.ExecutionID{tr.F, tr.G, tr.J, tr.R, tr.D, tr.E} {
		cmds, err := f.svc.Commands(ctx, id, human)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range cmds {
			if c.Type == control.Cancel {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[id != tr.D && id != tr.E]; n != want {
			t.Fatalf("%s has %d cancel commands, want %d", id, n, want)
		}
	}
}

// TestDescendantOwnerAppliesItsCancel: a descendant owned by another
// attempt keeps its derived Cancel accepted (its owner rules hold); the
// parent's record says so, and the sweeper's Reconcile applies it once the
// owner is gone.
func TestDescendantOwnerAppliesItsCancel(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	p := f.execution(t, "exe_p", "agent_chat", actionflow.ExecRunning)
	j, err := f.p.Flow.StartChildTask(ctx, p.ExecutionID, actionflow.ChildTask{ExecutionID: "exe_j", Kind: "job"})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := f.svc.Acquire(ctx, j.ExecutionID, "att_busy")
	if err != nil {
		t.Fatal(err)
	}
	root := f.submitOK(t, p.ExecutionID, cmd("cancel_p", control.Cancel, 1, ""))
	if len(root.Descendants) != 1 || root.Descendants[0].Status != string(control.StatusAccepted) {
		t.Fatalf("reached %+v", root.Descendants)
	}
	if got := f.get(t, j.ExecutionID); got.Status != actionflow.ExecRunning {
		t.Fatalf("a non-owner applied the child's cancel: %s", got.Status)
	}
	f.svc.Release(ctx, owner)
	if err := f.svc.Reconcile(ctx, j.ExecutionID); err != nil {
		t.Fatal(err)
	}
	if got := f.get(t, j.ExecutionID); got.Status != actionflow.ExecCancelled {
		t.Fatalf("child after its owner applied: %s", got.Status)
	}
	r, err := f.svc.Command(ctx, j.ExecutionID, root.Descendants[0].CommandID, human)
	if err != nil || r.Status != control.StatusApplied {
		t.Fatalf("derived cancel: %+v %v", r, err)
	}
}

// TestForkCannotEscapeACancel: a Fork decided against a running parent
// whose cancellation is written just before the child (the race after a
// lease takeover) creates nothing: the child's transaction checks the
// parent's version, the Fork is decided again and refused. A Fork that
// made its child first is reached by the Cancel.
func TestForkCannotEscapeACancel(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// cancelFirst: the parent moves to cancelling right before the
		// child's transaction; else the Cancel is sent after the fork.
		cancelFirst bool
		// unfinished: the fork made its child but its record was not
		// completed (a crash) before the Cancel.
		unfinished bool
	}{
		{"cancelling written between the fork's decision and its child", true, false},
		{"fork applied first, then cancel", false, false},
		{"fork made its child, record unfinished, then cancel", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := flowtest.NewWorld(t)
			faulty := &flowtest.FaultyStore{}
			w.Wrap = func(s store.Store) store.Store { faulty.Store = s; return faulty }
			p := w.Start(t)
			svc, err := control.New(control.Config{Flow: p.Flow, Logger: w.Log})
			if err != nil {
				t.Fatal(err)
			}
			f := fixture{p: p, svc: svc}
			parent := f.execution(t, "exe_p", "agent_chat", actionflow.ExecRunning)
			if tc.cancelFirst {
				var once bool
				faulty.Before = func(op string, it store.Item) {
					if op == "put" && strings.HasPrefix(it.SK, "CHILD#") && !once {
						once = true
						// Another owner (after a takeover) applies a Cancel now.
						e := f.get(t, parent.ExecutionID)
						e.Status = actionflow.ExecCancelling
						if err := p.Flow.SaveExecution(ctx, &e, e.Version, 0); err != nil {
							t.Error(err)
						}
					}
				}
			}
			if tc.unfinished {
				faulty.Set(func(op string, it store.Item) bool { return op == "cas" && it.SK == "CMD#fork_1" })
			}
			fork, err := svc.Submit(ctx, parent.ExecutionID, cmd("fork_1", control.Fork, 1, ""), human)
			if err != nil && !tc.unfinished {
				t.Fatal(err)
			}
			faulty.Before = nil
			child := control.ChildID(parent.ExecutionID, "fork_1")
			if tc.unfinished {
				faulty.Set(nil)
				f.submitOK(t, parent.ExecutionID, cmd("cancel_1", control.Cancel, 1, ""))
				if err := svc.Reconcile(ctx, parent.ExecutionID); err != nil {
					t.Fatal(err)
				}
				fork, err = svc.Command(ctx, parent.ExecutionID, "fork_1", human)
				if err != nil || fork.Status != control.StatusApplied || fork.Child != child {
					t.Fatalf("the unfinished fork: %+v %v", fork, err)
				}
				if got := f.get(t, child); got.Status != actionflow.ExecCancelled {
					t.Fatalf("its child escaped the cancel: %s", got.Status)
				}
				return
			}
			if tc.cancelFirst {
				if fork.Status != control.StatusRejected || !strings.Contains(fork.Reason, "cancellation takes precedence") {
					t.Fatalf("fork beside a cancelling parent: %+v", fork)
				}
				if _, err := p.Flow.GetExecution(ctx, child); err == nil {
					t.Fatalf("the child %s exists beside a cancelling parent", child)
				}
				return
			}
			if fork.Status != control.StatusApplied || fork.Child != child {
				t.Fatalf("fork: %+v", fork)
			}
			f.submitOK(t, parent.ExecutionID, cmd("cancel_1", control.Cancel, 1, ""))
			if got := f.get(t, child); got.Status != actionflow.ExecCancelled {
				t.Fatalf("the fork escaped the cancel: %s", got.Status)
			}
		})
	}
}

// TestRecoveredCancelReachesDescendantsOnce: a cancellation stopped by a
// store failure part-way through its descendants is finished by the
// sweeper's Reconcile with the same derived command ids: every open
// descendant ends cancelled with exactly one Cancel, never two.
func TestRecoveredCancelReachesDescendantsOnce(t *testing.T) {
	cases := []struct {
		name string
		fail func(op string, it store.Item) bool
	}{
		{"the second child's cancel is not saved", func(op string, it store.Item) bool {
			return op == "put" && it.PK == "EXEC#exe_j2" && strings.HasPrefix(it.SK, "CMD#cxl_")
		}},
		{"the grandchild's cancel is not saved", func(op string, it store.Item) bool {
			return op == "put" && it.PK == "EXEC#exe_g" && strings.HasPrefix(it.SK, "CMD#cxl_")
		}},
		{"the root's record is not completed", func(op string, it store.Item) bool {
			return op == "cas" && it.SK == "CMD#cancel_p"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := flowtest.NewWorld(t)
			faulty := &flowtest.FaultyStore{}
			w.Wrap = func(s store.Store) store.Store { faulty.Store = s; return faulty }
			p := w.Start(t)
			svc, err := control.New(control.Config{Flow: p.Flow, Logger: w.Log})
			if err != nil {
				t.Fatal(err)
			}
			f := fixture{p: p, svc: svc}
			parent := f.execution(t, "exe_p", "function", actionflow.ExecRunning)
			var kids []ids.ExecutionID
			for _, id := range []ids.ExecutionID{"exe_j1", "exe_j2"} {
				if _, err := p.Flow.StartChildTask(ctx, parent.ExecutionID, actionflow.ChildTask{ExecutionID: id, Kind: "job"}); err != nil {
					t.Fatal(err)
				}
				kids = append(kids, id)
			}
			if _, err := p.Flow.StartChildTask(ctx, "exe_j1", actionflow.ChildTask{ExecutionID: "exe_g", Kind: "function"}); err != nil {
				t.Fatal(err)
			}
			kids = append(kids, "exe_g")
			faulty.Set(tc.fail)
			if _, err := svc.Submit(ctx, parent.ExecutionID, cmd("cancel_p", control.Cancel, 1, ""), human); err == nil {
				t.Fatal("the injected failure did not stop the cancellation")
			}
			faulty.Set(nil)
			if err := svc.Reconcile(ctx, parent.ExecutionID); err != nil {
				t.Fatal(err)
			}
			for _, id := range kids { // a descendant's own pending cancel, as the sweeper would
				if err := svc.Reconcile(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			root, err := svc.Command(ctx, parent.ExecutionID, "cancel_p", human)
			if err != nil || root.Status != control.StatusApplied || len(root.Descendants) != 3 {
				t.Fatalf("root cancel %+v %v", root, err)
			}
			for _, id := range append(kids, parent.ExecutionID) {
				if got := f.get(t, id); got.Status != actionflow.ExecCancelled {
					t.Fatalf("%s is %s", id, got.Status)
				}
				cmds, err := svc.Commands(ctx, id, human)
				if err != nil {
					t.Fatal(err)
				}
				if len(cmds) != 1 || cmds[0].Status != control.StatusApplied {
					t.Fatalf("%s has commands %+v", id, cmds)
				}
			}
		})
	}
}

// TestConcurrentForksAndChildTasksDoNotEscapeACancel: forks and child
// tasks started while a Cancel of their parent is applied, from many
// goroutines, either exist before the cancellation (and are cancelled) or
// are refused; none is left running.
func TestConcurrentForksAndChildTasksDoNotEscapeACancel(t *testing.T) {
	const rounds, forks = 6, 6
	ctx := context.Background()
	f := newFixture(t)
	for round := 0; round < rounds; round++ {
		parent := f.execution(t, ids.ExecutionID(fmt.Sprintf("exe_p%d", round)), "function", actionflow.ExecRunning)
		start := make(chan struct{})
		done := make(chan error, 2*forks+1)
		go func() {
			<-start
			_, err := f.svc.Submit(ctx, parent.ExecutionID, cmd("cancel", control.Cancel, 1, ""), human)
			done <- err
		}()
		for i := 0; i < forks; i++ {
			go func(i int) {
				<-start
				_, err := f.svc.Submit(ctx, parent.ExecutionID, cmd(fmt.Sprintf("fork_%d", i), control.Fork, 1, ""), human)
				var ue *control.UnsupportedError
				var se *control.StaleVersionError
				if errors.As(err, &ue) || errors.As(err, &se) {
					err = nil // refused: the parent was cancelling or moved
				}
				done <- err
			}(i)
			go func(i int) {
				<-start
				_, err := f.p.Flow.StartChildTask(ctx, parent.ExecutionID, actionflow.ChildTask{ExecutionID: ids.ExecutionID(fmt.Sprintf("exe_p%d_t%d", round, i)), Kind: "job"})
				var ce *actionflow.ConflictError
				if errors.As(err, &ce) && ce.Code == "parent_not_running" {
					err = nil
				}
				done <- err
			}(i)
		}
		close(start)
		for i := 0; i < 2*forks+1; i++ {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		// What the sweeper does: finish every pending command.
		pending, err := f.svc.PendingExecutions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range pending {
			if err := f.svc.Reconcile(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		kids, err := f.p.Flow.Children(ctx, f.get(t, parent.ExecutionID))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range kids {
			if got := f.get(t, id); got.Status != actionflow.ExecCancelled {
				t.Fatalf("round %d: child %s escaped the cancel: %s", round, id, got.Status)
			}
		}
	}
}
