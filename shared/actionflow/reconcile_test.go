package actionflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

var owner = actionflow.Principal{Subject: "owner", Role: "human", Session: "ses_1"}

// unknownAction runs a sync action whose executor cannot tell what
// happened: sealed, folded and projected as unknown.
func unknownAction(t *testing.T, f fixture) actionflow.Action {
	t.Helper()
	f.exec.result = actionflow.ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "connection_reset"}
	a := f.runSync(t, "noop", `{"charge":5}`)
	if a.States.Outcome != lifecycle.OutcomeUnknown || a.States.Delivery != lifecycle.DeliveryProjected {
		t.Fatalf("setup: %+v", a.States)
	}
	return a
}

// TestReconcileRefusals: nothing is written for a refused reconciliation.
func TestReconcileRefusals(t *testing.T) {
	ok := actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeFailed, Note: "no charge in the ledger"}
	cases := []struct {
		name  string
		by    actionflow.Principal
		req   actionflow.ReconcileRequest
		want  any // *actionflow.ForbiddenError or *actionflow.ValidationError
		field string
	}{
		{"an agent", actionflow.Principal{Subject: "agent", Role: "agent", Session: "ses_1"}, ok, &actionflow.ForbiddenError{}, ""},
		{"the system", actionflow.Principal{Subject: "sweeper", Role: "system"}, ok, &actionflow.ForbiddenError{}, ""},
		{"a human of another session", actionflow.Principal{Subject: "other", Role: "human", Session: "ses_2"}, ok, &actionflow.ForbiddenError{}, ""},
		{"no outcome", owner, actionflow.ReconcileRequest{Note: "x"}, &actionflow.ValidationError{}, "outcome"},
		{"not_started", owner, actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeNotStarted, Note: "x"}, &actionflow.ValidationError{}, "outcome"},
		{"unknown again", owner, actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeUnknown, Note: "x"}, &actionflow.ValidationError{}, "outcome"},
		{"a blank note", owner, actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeFailed, Note: " \n"}, &actionflow.ValidationError{}, "note"},
		{"evidence too long", owner, actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeFailed, Note: "x",
			Evidence: strings.Repeat("e", actionflow.MaxReconcileEvidence+1)}, &actionflow.ValidationError{}, "evidence"},
	}
	f := newFixture(t)
	a := unknownAction(t, f)
	before, _ := f.svc.GetAction(context.Background(), a.ActionID)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, applied, err := f.svc.Reconcile(context.Background(), a.ActionID, tc.req, tc.by)
			switch want := tc.want.(type) {
			case *actionflow.ForbiddenError:
				if !errors.As(err, &want) {
					t.Fatalf("want forbidden, got %v", err)
				}
			case *actionflow.ValidationError:
				if !errors.As(err, &want) || want.Field != tc.field {
					t.Fatalf("want a validation error on %s, got %v", tc.field, err)
				}
			}
			if applied {
				t.Fatal("applied")
			}
			if _, err := f.svc.GetReconciliation(context.Background(), a.ActionID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a record was written: %v", err)
			}
			if got, _ := f.svc.GetAction(context.Background(), a.ActionID); got.Version != before.Version {
				t.Fatalf("the action was written: %+v", got.States)
			}
		})
	}
}

// TestReconcileNotReconcilable: only an unknown outcome that was delivered
// is reconciled; a known result and an unknown not yet projected are 409.
func TestReconcileNotReconcilable(t *testing.T) {
	ctx := context.Background()
	req := actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeFailed, Note: "checked"}
	cases := []struct {
		name    string
		setup   func(t *testing.T, f fixture) actionflow.Action
		earlier bool // recorded by an earlier revision's record step
	}{
		{"succeeded", func(t *testing.T, f fixture) actionflow.Action { return f.runSync(t, "noop", `{}`) }, false},
		{"failed", func(t *testing.T, f fixture) actionflow.Action {
			f.exec.result = actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "exit_1"}
			return f.runSync(t, "noop", `{}`)
		}, false},
		{"denied (not_started)", func(t *testing.T, f fixture) actionflow.Action { return f.runSync(t, "forbidden", `{}`) }, false},
		{"unknown, recorded (by an earlier revision) but not projected", func(t *testing.T, f fixture) actionflow.Action {
			f.exec.result = actionflow.ToolResult{Outcome: lifecycle.OutcomeUnknown}
			a := f.submit(t, "noop", `{}`)
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
			if _, err := f.svc.Record(ctx, si); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.svc.GetAction(ctx, a.ActionID); got.States.Delivery != lifecycle.DeliveryRecorded {
				t.Fatalf("set-up: delivery %s, want recorded", got.States.Delivery)
			}
			return a
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []func(*actionflow.Config)
			if tc.earlier {
				opts = append(opts, earlierRecord)
			}
			f := newFixture(t, opts...)
			a := tc.setup(t, f)
			_, _, err := f.svc.Reconcile(ctx, a.ActionID, req, owner)
			var ce *actionflow.ConflictError
			if !errors.As(err, &ce) || ce.Code != "not_reconcilable" {
				t.Fatalf("want not_reconcilable, got %v", err)
			}
			if cur, ok := ce.Current.(actionflow.Action); !ok || cur.ActionID != a.ActionID {
				t.Fatalf("current %+v", ce.Current)
			}
			if _, err := f.svc.GetReconciliation(ctx, a.ActionID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a record was written: %v", err)
			}
		})
	}
}

// TestReconcileAppliesOnce: the record beside the receipt, the reconciled
// states, the checkpoint fold and the event, in one transaction; the
// receipt never changes; a repeat is the stored record; a different one
// is a conflict carrying the first; late record and project steps change
// nothing.
func TestReconcileAppliesOnce(t *testing.T) {
	ctx := context.Background()
	faulty := &flowtest.FaultyStore{}
	f := newFixture(t, func(c *actionflow.Config) { faulty.Store = c.Store; c.Store = faulty })
	a := unknownAction(t, f)
	rc, _ := f.svc.GetReceipt(ctx, a.ActionID)
	ck0, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID)
	if un, _ := f.svc.UnresolvedActions(ctx, a.ExecutionID); len(un) != 1 {
		t.Fatalf("before: %d unresolved", len(un))
	}
	req := actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeFailed, Note: "no charge in the ledger", EvidenceRef: "blob://evidence/1"}

	// The transaction fails as a whole: nothing of it is written.
	faulty.Set(func(op string, it store.Item) bool { return strings.HasPrefix(it.SK, "CKPT#") })
	if _, _, err := f.svc.Reconcile(ctx, a.ActionID, req, owner); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("want unavailable, got %v", err)
	}
	faulty.Set(nil)
	if _, err := f.svc.GetReconciliation(ctx, a.ActionID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("half written: record %v", err)
	}
	if got, _ := f.svc.GetAction(ctx, a.ActionID); got.States.Reconciled {
		t.Fatalf("half written: %+v", got.States)
	}
	if n := reconciledEvents(t, f); n != 0 {
		t.Fatalf("half written: %d action.reconciled events", n)
	}

	rec, applied, err := f.svc.Reconcile(ctx, a.ActionID, req, owner)
	if err != nil || !applied || rec.Outcome != lifecycle.OutcomeFailed || rec.ReceiptDigest != rc.Digest || rec.ReconciledBy != owner {
		t.Fatalf("reconcile: %+v %v %v", rec, applied, err)
	}
	got, _ := f.svc.GetAction(ctx, a.ActionID)
	want := lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeFailed, Delivery: lifecycle.DeliveryProjected, Started: true, Reconciled: true}
	if got.States != want || got.ReconciledBy == nil || *got.ReconciledBy != owner {
		t.Fatalf("action %+v by %+v", got.States, got.ReconciledBy)
	}
	if after, _ := f.svc.GetReceipt(ctx, a.ActionID); after.Digest != rc.Digest || after.Outcome != lifecycle.OutcomeUnknown {
		t.Fatalf("the receipt changed: %+v", after)
	}
	ck, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID)
	if ck.Reconciled != 1 || ck.Version != ck0.Version+1 || ck.Recorded != ck0.Recorded {
		t.Fatalf("checkpoint %+v (before %+v)", ck, ck0)
	}
	if _, failed := ck.RecentFailures.Get(identity.Identity{Tool: a.Tool, Digest: a.ArgsDigest}); failed {
		t.Fatal("a reconciled failure spent the operation's repeat budget")
	}
	if un, _ := f.svc.UnresolvedActions(ctx, a.ExecutionID); len(un) != 0 {
		t.Fatalf("after: %d unresolved", len(un))
	}
	if n := reconciledEvents(t, f); n != 1 {
		t.Fatalf("%d action.reconciled events", n)
	}

	// Repeats.
	again, applied, err := f.svc.Reconcile(ctx, a.ActionID, req, owner)
	if err != nil || applied || again.Digest != rec.Digest || !again.ReconciledAt.Equal(rec.ReconciledAt) {
		t.Fatalf("repeat: %+v %v %v", again, applied, err)
	}
	other := actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeSucceeded, Note: "it went through"}
	_, _, err = f.svc.Reconcile(ctx, a.ActionID, other, owner)
	var ce *actionflow.ConflictError
	if !errors.As(err, &ce) || ce.Code != "already_reconciled" {
		t.Fatalf("second: %v", err)
	}
	if first, ok := ce.Current.(actionflow.Reconciliation); !ok || first.Digest != rec.Digest {
		t.Fatalf("current %+v", ce.Current)
	}

	// Someone of another session learns nothing about the record.
	if _, _, err := f.svc.Reconcile(ctx, a.ActionID, req, actionflow.Principal{Subject: "other", Role: "human", Session: "ses_2"}); !errors.As(err, new(*actionflow.ForbiddenError)) {
		t.Fatalf("another session: %v", err)
	}

	// Late steps of the state machine (at-least-once) change nothing.
	if out, err := f.svc.Record(ctx, in(a)); err != nil || out.Outcome != lifecycle.OutcomeUnknown {
		t.Fatalf("late record: %+v %v", out, err)
	}
	if _, err := f.svc.Project(ctx, in(a)); err != nil { // the sweeper's, or an earlier revision's Project state
		t.Fatalf("late project: %v", err)
	}
	if late, _ := f.svc.GetAction(ctx, a.ActionID); late.States != want {
		t.Fatalf("after late steps: %+v", late.States)
	}
	if ck2, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID); ck2.Recorded != ck.Recorded || ck2.Reconciled != 1 {
		t.Fatalf("late steps folded again: %+v", ck2)
	}
}

// TestReconcileRace: people reconciling at once (different notes): exactly
// one applies, every other one gets the conflict with that first record,
// and one event is written.
func TestReconcileRace(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a := unknownAction(t, f)
	const n = 8
	type answer struct {
		rec     actionflow.Reconciliation
		applied bool
		err     error
	}
	answers := make(chan answer, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			req := actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeFailed, Note: "checked by " + string(rune('a'+i))}
			rec, applied, err := f.svc.Reconcile(ctx, a.ActionID, req, owner)
			answers <- answer{rec, applied, err}
		}(i)
	}
	var winner actionflow.Reconciliation
	applied, conflicts := 0, []actionflow.Reconciliation{}
	for i := 0; i < n; i++ {
		ans := <-answers
		var ce *actionflow.ConflictError
		switch {
		case ans.err == nil && ans.applied:
			applied++
			winner = ans.rec
		case errors.As(ans.err, &ce) && ce.Code == "already_reconciled":
			conflicts = append(conflicts, ce.Current.(actionflow.Reconciliation))
		default:
			t.Fatalf("answer %+v", ans)
		}
	}
	if applied != 1 || len(conflicts) != n-1 {
		t.Fatalf("%d applied, %d conflicts", applied, len(conflicts))
	}
	for _, c := range conflicts {
		if c.Digest != winner.Digest {
			t.Fatalf("a conflict carried %s, not the first %s", c.Note, winner.Note)
		}
	}
	if count := reconciledEvents(t, f); count != 1 {
		t.Fatalf("%d action.reconciled events", count)
	}
}

func reconciledEvents(t *testing.T, f fixture) int {
	t.Helper()
	evs, err := f.svc.ReadEvents(context.Background(), "ses_1", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == "action.reconciled" {
			n++
		}
	}
	return n
}
