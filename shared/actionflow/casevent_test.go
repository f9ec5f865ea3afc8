package actionflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/store"
)

// eventFailingStore fails every write that appends an event of one type
// (alone or as a transaction part) as an unavailable backend would.
type eventFailingStore struct {
	store.Store
	typ string
}

func (s *eventFailingStore) hit(body []byte) bool {
	return strings.Contains(string(body), `"type":"`+s.typ+`"`)
}

func (s *eventFailingStore) Append(ctx context.Context, stream string, body []byte) (int64, error) {
	if s.hit(body) {
		return 0, &store.UnavailableError{Op: "append", Err: errors.New("injected failure")}
	}
	return s.Store.Append(ctx, stream, body)
}

func (s *eventFailingStore) Transact(ctx context.Context, writes []store.Write) ([]int64, error) {
	for _, w := range writes {
		if w.Append != nil && s.hit(w.Append.Body) {
			return nil, &store.UnavailableError{Op: "transact", Err: errors.New("injected failure")}
		}
	}
	return s.Store.Transact(ctx, writes)
}

// TestDecisionAndItsEntryAreOneWrite: when the decision log entry of an
// approval decision cannot be written, the decision is not made either
// (the approval stays pending and can be decided once the store is back):
// a decision never exists without its entry.
func TestDecisionAndItsEntryAreOneWrite(t *testing.T) {
	failing := &eventFailingStore{typ: "approval.approved"}
	f := newFixture(t, func(c *actionflow.Config) { failing.Store = c.Store; c.Store = failing })
	ctx := context.Background()
	a := f.submit(t, "risky", `{"cmd":"deploy"}`)
	if _, err := f.svc.Authorize(ctx, in(a)); err != nil {
		t.Fatal(err)
	}
	await := in(a)
	await.Mode, await.TaskToken = "await", "tok-1"
	w, err := f.svc.ApprovalStep(ctx, await)
	if err != nil {
		t.Fatal(err)
	}
	human := actionflow.Principal{Subject: "alice", Role: "human", Session: "ses_1", Origin: "ui"}
	if _, err := f.svc.DecideApproval(ctx, w.ApprovalID, "approve", a.ArgsDigest, human); err == nil {
		t.Fatal("the approval was decided although its entry could not be written")
	}
	if ap, err := f.svc.GetApproval(ctx, a.ActionID); err != nil || ap.Status != actionflow.ApprovalPending {
		t.Fatalf("after the failed write: %+v %v", ap, err)
	}
	if f.tasks.success["tok-1"] != nil {
		t.Fatal("the wait was completed without a durable decision")
	}
	failing.typ = "none"
	if _, err := f.svc.DecideApproval(ctx, w.ApprovalID, "approve", a.ArgsDigest, human); err != nil {
		t.Fatal(err)
	}
	evs, err := f.svc.ReadEvents(ctx, "ses_1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == "approval.approved" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d approval.approved entries, want 1", n)
	}
}
