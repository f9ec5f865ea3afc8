package modelreq

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// barrierStore holds every read of a model request record until n readers
// arrived (or a second passed), so n callers all decide on the same
// stored state and then race their writes: the race is forced, not hoped for.
type barrierStore struct {
	store.Store
	mu      sync.Mutex
	n       int
	waiting int
	release chan struct{}
}

func (b *barrierStore) arm(n int) {
	b.mu.Lock()
	b.n, b.waiting, b.release = n, 0, make(chan struct{})
	b.mu.Unlock()
}

func (b *barrierStore) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if strings.HasPrefix(k.SK, skPrefix) {
		b.mu.Lock()
		ch := b.release
		if ch != nil {
			b.waiting++
			if b.waiting == b.n {
				close(ch)
				b.release = nil
			}
		}
		b.mu.Unlock()
		if ch != nil {
			select {
			case <-ch:
			case <-time.After(time.Second):
			}
		}
	}
	return b.Store.Get(ctx, k)
}

func flowLedger(t *testing.T) (*Ledger, *actionflow.Service, *barrierStore, actionflow.Execution) {
	t.Helper()
	sq, err := sqlitestore.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	b := &barrierStore{Store: sq}
	svc, err := actionflow.New(actionflow.Config{Store: b})
	if err != nil {
		t.Fatal(err)
	}
	e := actionflow.Execution{ExecutionID: "exe_1", SessionID: "ses_1", Kind: "agent_chat", Status: actionflow.ExecRunning}
	if err := svc.SaveExecution(context.Background(), &e, 0, 0); err != nil {
		t.Fatal(err)
	}
	return ForFlow(svc), svc, b, e
}

func countEvents(t *testing.T, svc *actionflow.Service, typ string) int {
	t.Helper()
	evs, err := svc.ReadEvents(context.Background(), "ses_1", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// TestRacingReportsWriteOneRecordAndOneEventEach: 8 reports of one id that
// all read "absent" before writing create it once (one started event),
// and 8 different completions that all read "open" complete it once (one
// completed event); each loser answers from the stored record.
func TestRacingReportsWriteOneRecordAndOneEventEach(t *testing.T) {
	l, svc, b, e := flowLedger(t)
	ctx := context.Background()
	const n = 8
	b.arm(n)
	var wg sync.WaitGroup
	created := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, created[i], errs[i] = l.Report(ctx, e, StartReport{RequestID: "req_1", Provider: "bedrock", Model: "m"})
		}(i)
	}
	wg.Wait()
	c := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("report %d: %v", i, errs[i])
		}
		if created[i] {
			c++
		}
	}
	if c != 1 || countEvents(t, svc, "model_request.started") != 1 {
		t.Fatalf("%d reports created it; %d started events", c, countEvents(t, svc, "model_request.started"))
	}

	statuses := []Status{Completed, Cancelled, Incomplete, Completed}
	got := make([]Record, n)
	b.arm(n)
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got[i], errs[i] = l.Finish(ctx, e, "req_1", Completion{Status: statuses[i%len(statuses)]})
		}(i)
	}
	wg.Wait()
	stored, err := l.get(ctx, e.ExecutionID, "req_1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		var ce *actionflow.ConflictError
		same := statuses[i%len(statuses)] == stored.Status
		switch {
		case same && errs[i] != nil, !same && !errors.As(errs[i], &ce):
			t.Fatalf("completion %d (%s) with %s stored: %v", i, statuses[i%len(statuses)], stored.Status, errs[i])
		case got[i].Status != stored.Status:
			t.Fatalf("completion %d answered %s, stored %s", i, got[i].Status, stored.Status)
		}
	}
	if k := countEvents(t, svc, "model_request.completed"); k != 1 {
		t.Fatalf("%d completed events", k)
	}
}

// TestReportRacingTheEnd: a report whose execution ends between the
// caller's read and the write closes its own record incomplete (the end's
// listing may have run before the record existed) and answers
// execution_ended, so no request of an ended execution stays open.
func TestReportRacingTheEnd(t *testing.T) {
	l, svc, _, e := flowLedger(t)
	ctx := context.Background()
	ended := e
	ended.Status = actionflow.ExecCompleted
	if err := svc.SaveExecution(ctx, &ended, e.Version, 0); err != nil {
		t.Fatal(err)
	}
	// e is the caller's stale read: still running.
	r, created, err := l.Report(ctx, e, StartReport{RequestID: "req_1", Provider: "p", Model: "m"})
	var ce *actionflow.ConflictError
	if !errors.As(err, &ce) || ce.Code != "execution_ended" || !created {
		t.Fatalf("report racing the end: %v created=%v", err, created)
	}
	if r.Status != Incomplete || r.ErrorCode != CodeNoTerminalEvent {
		t.Fatalf("record %+v", r)
	}
	if countEvents(t, svc, "model_request.completed") != 1 {
		t.Fatal("no completed event for the closing")
	}
}

// TestSweepLeavesTheAgentsRequests: start-up's Sweep closes the requests
// this service's process made (the reviewer's) and leaves the agent's,
// whose process a crash of the service does not end.
func TestSweepLeavesTheAgentsRequests(t *testing.T) {
	l, _, _, e := flowLedger(t)
	ctx := context.Background()
	if _, _, err := l.Report(ctx, e, StartReport{RequestID: "req_agent", Provider: "p", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(ctx, Record{RequestID: "req_review", SessionID: "ses_1", Purpose: PurposeReviewer, Provider: "bedrock", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	n, err := l.Sweep(ctx, time.Now().Add(time.Second))
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	if r, _ := l.Get(ctx, "req_review"); r.Status != Incomplete || r.ErrorCode != CodeNoTerminalEvent {
		t.Fatalf("reviewer request %+v", r)
	}
	if r, _ := l.get(ctx, e.ExecutionID, "req_agent"); r.Status != Open {
		t.Fatalf("agent request %+v", r)
	}
}

// TestSweepClosesTheRequestsOfAnEndedExecution: an end whose closing was
// interrupted (the execution is saved ended, its requests still open) is
// finished by the next Sweep, whatever the cutoff; a running execution's
// request is left to its agent.
func TestSweepClosesTheRequestsOfAnEndedExecution(t *testing.T) {
	l, svc, _, running := flowLedger(t)
	ctx := context.Background()
	ended := actionflow.Execution{ExecutionID: "exe_2", SessionID: "ses_1", Kind: "agent_chat", Status: actionflow.ExecRunning}
	if err := svc.SaveExecution(ctx, &ended, 0, 0); err != nil {
		t.Fatal(err)
	}
	for _, e := range []actionflow.Execution{running, ended} {
		if _, _, err := l.Report(ctx, e, StartReport{RequestID: "req_1", Provider: "p", Model: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	ended.Status = actionflow.ExecFailed
	if err := svc.SaveExecution(ctx, &ended, ended.Version, 0); err != nil {
		t.Fatal(err)
	}
	n, err := l.Sweep(ctx, time.Now().Add(-time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	if r, _ := l.get(ctx, ended.ExecutionID, "req_1"); r.Status != Incomplete || r.ErrorCode != CodeNoTerminalEvent {
		t.Fatalf("the ended execution's request: %+v", r)
	}
	if r, _ := l.get(ctx, running.ExecutionID, "req_1"); r.Status != Open {
		t.Fatalf("the running execution's request: %+v", r)
	}
}
