package actionflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// runToRecord submits an action of execution exec and runs it up to its
// record step (authorized, dispatched): the input record takes.
func (f fixture) runToRecord(t *testing.T, exec ids.ExecutionID, n int) actionflow.StepInput {
	t.Helper()
	ctx := context.Background()
	a, _, err := f.svc.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_1", ExecutionID: exec, ToolCallID: ids.ToolCallID(fmt.Sprintf("c%d", n)),
		Tool: "noop", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
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
	return si
}

// TestParallelFoldsOfOneExecution: parallel actions of one execution
// race for each checkpoint version (a put-once of CKPT#<n+1>); a loser
// reads again and retries, so every receipt is folded exactly once and
// every version has its saved point.
func TestParallelFoldsOfOneExecution(t *testing.T) {
	ctx := context.Background()
	const n = 8
	// Every record reads the checkpoint before any of them writes: all
	// race for version 1, then the losers for the next ones.
	race := &readBarrier{n: n, all: make(chan struct{}), arrived: -1 << 30}
	f := newFixture(t, func(c *actionflow.Config) { race.Store = c.Store; c.Store = race })
	inputs := make([]actionflow.StepInput, n)
	for i := range inputs {
		inputs[i] = f.runToRecord(t, "exe_par", i)
	}
	race.arm()
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range inputs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			_, errs[i] = f.svc.Record(ctx, inputs[i])
		}(i)
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	ck, err := f.svc.GetCheckpoint(ctx, "exe_par")
	if err != nil || ck.Version != n || ck.Recorded != n {
		t.Fatalf("checkpoint %+v %v, want version and recorded %d", ck, err, n)
	}
	e, err := f.svc.GetExecution(ctx, "exe_par")
	if err != nil {
		t.Fatal(err)
	}
	points, _, err := f.svc.SavedPoints(ctx, e)
	if err != nil || len(points) != n+1 {
		t.Fatalf("saved points %+v %v, want %d and the start", points, err, n)
	}
	seen := map[ids.ActionID]bool{}
	for i, p := range points {
		if p.Version != int64(i) || p.Recorded != int64(i) {
			t.Fatalf("saved point %d: %+v", i, p)
		}
		if i > 0 {
			seen[p.LastActionID] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct actions folded, want %d", len(seen), n)
	}
	// The checkpoint is only its saved points: no head item is written.
	if _, err := f.st.Get(ctx, store.Key{PK: "EXEC#exe_par", SK: "CKPT"}); err == nil {
		t.Fatal("a CKPT head item was written")
	}
}

// readBarrier, once armed, holds the first n checkpoint reads until all n
// have arrived (at most 10 s, so a test cannot hang on it).
type readBarrier struct {
	store.Store
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (b *readBarrier) arm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.arrived = 0
}

func (b *readBarrier) Query(ctx context.Context, pk string, opts store.QueryOptions) (store.Page, error) {
	if opts.SKPrefix == "CKPT" {
		b.mu.Lock()
		b.arrived++
		first, last := b.arrived > 0 && b.arrived <= b.n, b.arrived == b.n
		b.mu.Unlock()
		if last {
			close(b.all)
		}
		if first {
			select {
			case <-b.all:
			case <-time.After(10 * time.Second):
			}
		}
	}
	return b.Store.Query(ctx, pk, opts)
}

// TestCheckpointReadsLegacyHead: stores written before kept the
// checkpoint as a head item EXEC#<id>/CKPT (with saved points since they
// were kept). The checkpoint is the newest version wherever it is, and
// the next fold writes that version + 1 as a saved point, carrying the
// head's folded list.
func TestCheckpointReadsLegacyHead(t *testing.T) {
	head := func(version int64) store.Item {
		return store.Item{PK: "EXEC#exe_old", SK: "CKPT", Version: version, Body: []byte(fmt.Sprintf(
			`{"execution_id":"exe_old","recorded":%d,"last_action_id":"act_x","folded":["act_x"],"recent_failures":{},"revision":"rev_1","updated_at":"2026-01-01T00:00:00Z"}`, version))}
	}
	oldPoint := func(version int64) store.Item { // as written beside a head: no revision, no head mark
		return store.Item{PK: "EXEC#exe_old", SK: fmt.Sprintf("CKPT#%020d", version), Version: 1, Body: []byte(fmt.Sprintf(
			`{"execution_id":"exe_old","version":%d,"recorded":%d,"last_action_id":"act_x","recent_failures":{},"at":"2026-01-01T00:00:00Z"}`, version, version))}
	}
	newPoint := func(version int64) store.Item {
		return store.Item{PK: "EXEC#exe_old", SK: fmt.Sprintf("CKPT#%020d", version), Version: 1, Body: []byte(fmt.Sprintf(
			`{"execution_id":"exe_old","version":%d,"recorded":%d,"last_action_id":"act_y","recent_failures":{},"revision":"rev_2","folded":["act_x"],"head":true,"at":"2026-01-02T00:00:00Z"}`, version, version))}
	}
	cases := []struct {
		name         string
		seed         []store.Item
		wantVersion  int64
		wantLast     ids.ActionID
		wantRevision ids.RevisionID
		wantFolded   int
	}{
		{"nothing written yet", nil, 0, "", "", 0},
		{"a head written before saved points were kept", []store.Item{head(4)}, 4, "act_x", "rev_1", 1},
		{"a head beside its saved points", []store.Item{head(3), oldPoint(2), oldPoint(3)}, 3, "act_x", "rev_1", 1},
		{"saved points written since, above the head", []store.Item{head(3), oldPoint(3), newPoint(4), newPoint(5)}, 5, "act_y", "rev_2", 1},
		{"saved points without a head", []store.Item{newPoint(1), newPoint(2)}, 2, "act_y", "rev_2", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			for _, it := range tc.seed {
				if err := f.st.PutOnce(ctx, it); err != nil {
					t.Fatal(err)
				}
			}
			ck, err := f.svc.GetCheckpoint(ctx, "exe_old")
			if err != nil || ck.Version != tc.wantVersion || ck.Recorded != tc.wantVersion || ck.LastActionID != tc.wantLast ||
				ck.Revision != tc.wantRevision || len(ck.Folded) != tc.wantFolded || ck.ExecutionID != "exe_old" {
				t.Fatalf("checkpoint %+v %v", ck, err)
			}
			// The current version is a valid Fork/Retry point, saved point or not.
			if cur, err := f.svc.SavedPointState(ctx, "exe_old", ck.Version); err != nil || cur.Version != ck.Version || len(cur.Folded) != 0 {
				t.Fatalf("saved point state of the current version: %+v %v", cur, err)
			}

			// The next fold is version + 1, as a saved point; the head is not written again.
			si := f.runToRecord(t, "exe_old", 1)
			if _, err := f.svc.Record(ctx, si); err != nil {
				t.Fatal(err)
			}
			next, err := f.svc.GetCheckpoint(ctx, "exe_old")
			if err != nil || next.Version != tc.wantVersion+1 || next.Recorded != tc.wantVersion+1 || next.LastActionID != si.ActionID ||
				len(next.Folded) != tc.wantFolded {
				t.Fatalf("after a fold: %+v %v", next, err)
			}
			if _, err := f.st.Get(ctx, store.Key{PK: "EXEC#exe_old", SK: fmt.Sprintf("CKPT#%020d", tc.wantVersion+1)}); err != nil {
				t.Fatalf("saved point %d: %v", tc.wantVersion+1, err)
			}
			for _, it := range tc.seed {
				if it.SK != "CKPT" {
					continue
				}
				if got, err := f.st.Get(ctx, it.Key()); err != nil || got.Version != it.Version {
					t.Fatalf("the head was written: %+v %v", got, err)
				}
			}
			// A legacy head's folded list still answers for its actions.
			if tc.wantFolded > 0 {
				ok, err := f.svc.ActionRecorded(ctx, actionflow.Action{ActionID: "act_x", ExecutionID: "exe_old"})
				if err != nil || !ok {
					t.Fatalf("act_x recorded: %v %v", ok, err)
				}
			}
		})
	}
}
