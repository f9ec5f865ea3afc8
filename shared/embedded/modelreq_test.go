package embedded_test

import (
	"context"
	"testing"

	"github.com/openprogram/lifecycle/shared/modelreq"
)

// TestStartupClosesTheReviewersLostRequests: the reviewer's model
// requests run inside serve's process, so the ones still open when that
// process stops are lost: the next start-up closes them incomplete
// (no_terminal_event, with their completed event). An agent's request of
// a running execution lives in the agent's process and stays open.
func TestStartupClosesTheReviewersLostRequests(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	ex := &countingExecutor{}
	ctx := context.Background()
	s := start(t, dir, ws, ex)
	a := waitFor(t, s, submit(t, s, "mutate", `{}`).ActionID, terminal)
	e, err := s.Service.GetExecution(ctx, a.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	l := modelreq.ForFlow(s.Service)
	if _, _, err := l.Report(ctx, e, modelreq.StartReport{RequestID: "req_agent", Provider: "anthropic", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(ctx, modelreq.Record{RequestID: "req_review", SessionID: e.SessionID, ActionID: a.ActionID,
		Purpose: modelreq.PurposeReviewer, Provider: "bedrock", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)

	s = start(t, dir, ws, ex)
	defer s.Close(ctx)
	l = modelreq.ForFlow(s.Service)
	if r, err := l.Get(ctx, "req_review"); err != nil || r.Status != modelreq.Incomplete || r.ErrorCode != modelreq.CodeNoTerminalEvent {
		t.Fatalf("the reviewer's lost request after the restart: %+v %v", r, err)
	}
	rs, err := l.ListExecution(ctx, e.ExecutionID)
	if err != nil || len(rs) != 1 || rs[0].Status != modelreq.Open {
		t.Fatalf("the agent's request after the restart: %+v %v", rs, err)
	}
	evs, err := s.Service.ReadEvents(ctx, e.SessionID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == "model_request.completed" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d model_request.completed events, want 1 (the reviewer's closing)", n)
	}
}
