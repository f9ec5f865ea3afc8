package embedded_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// TestParallelActionsOfOneExecution: actions of one execution submitted
// at once run through the real state machine and handlers; their record
// steps race for the checkpoint's next version (the put-once of its saved
// point) and every receipt is folded exactly once.
func TestParallelActionsOfOneExecution(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	ex := &countingExecutor{}
	s := start(t, dir, ws, ex)
	defer s.Close(context.Background())
	ctx := context.Background()
	first := submit(t, s, "mutate", `{"target":"first"}`)
	waitFor(t, s, first.ActionID, terminal)

	const n = 12
	var wg sync.WaitGroup
	got := make([]actionflow.Action, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, errs[i] = s.Service.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_e2e", ExecutionID: first.ExecutionID,
				ToolCallID: ids.ToolCallID(fmt.Sprintf("call_%d", i)), Tool: "mutate", Arguments: json.RawMessage(fmt.Sprintf(`{"target":"t%d"}`, i)),
				Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	for _, a := range got {
		if a := waitFor(t, s, a.ActionID, terminal); a.States.Outcome != lifecycle.OutcomeSucceeded || a.States.Delivery != lifecycle.DeliveryProjected {
			t.Fatalf("action %s: %+v", a.ActionID, a.States)
		}
	}
	ck, err := s.Service.GetCheckpoint(ctx, first.ExecutionID)
	if err != nil || ck.Recorded != n+1 || ck.Version != n+1 {
		t.Fatalf("checkpoint %+v %v, want %d receipts folded", ck, err, n+1)
	}
	e, err := s.Service.GetExecution(ctx, first.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	points, _, err := s.Service.SavedPoints(ctx, e)
	if err != nil || len(points) != n+2 {
		t.Fatalf("%d saved points %v, want %d and the start", len(points), err, n+1)
	}
	folded := map[ids.ActionID]bool{}
	for i, p := range points {
		if p.Version != int64(i) || p.Recorded != int64(i) {
			t.Fatalf("saved point %d: %+v", i, p)
		}
		folded[p.LastActionID] = true
	}
	for _, a := range append(got, first) {
		if !folded[a.ActionID] {
			t.Fatalf("action %s has no saved point of its own", a.ActionID)
		}
	}
}
