package lifecycle

import (
	"encoding/json"
	"errors"
	"testing"
)

func mustStates(t *testing.T, steps ...func(States) (States, error)) States {
	t.Helper()
	s := NewStates()
	for i, step := range steps {
		var err error
		if s, err = step(s); err != nil {
			t.Fatalf("setup step %d: %v", i, err)
		}
	}
	return s
}

func perm(p Permission) func(States) (States, error) {
	return func(s States) (States, error) { return s.WithPermission(p) }
}
func out(o Outcome) func(States) (States, error) {
	return func(s States) (States, error) { return s.WithOutcome(o) }
}
func start(s States) (States, error) { return s.WithStart() }
func reconcile(o Outcome) func(States) (States, error) {
	return func(s States) (States, error) { return s.WithReconciliation(o) }
}

func deliver(d Delivery) func(States) (States, error) {
	return func(s States) (States, error) { return s.WithDelivery(d) }
}

func TestTransitions(t *testing.T) {
	cases := []struct {
		name  string
		setup []func(States) (States, error)
		step  func(States) (States, error)
		ok    bool
		dim   string
	}{
		{"allow", nil, perm(PermissionAllow), true, ""},
		{"ask then approve", []func(States) (States, error){perm(PermissionAsk)}, perm(PermissionAllow), true, ""},
		{"ask then decline", []func(States) (States, error){perm(PermissionAsk)}, perm(PermissionDeny), true, ""},
		{"deny is final", []func(States) (States, error){perm(PermissionDeny)}, perm(PermissionAllow), false, "permission"},
		{"allow revoked before start", []func(States) (States, error){perm(PermissionAllow)}, perm(PermissionDeny), true, ""},
		{"allow cannot become ask", []func(States) (States, error){perm(PermissionAllow)}, perm(PermissionAsk), false, "permission"},
		{"no permission change after start", []func(States) (States, error){perm(PermissionAllow), start}, perm(PermissionDeny), false, "permission"},
		{"undecided is not a decision", nil, perm(PermissionUndecided), false, "permission"},
		{"start needs allow", []func(States) (States, error){perm(PermissionAsk)}, start, false, "start"},
		{"start twice", []func(States) (States, error){perm(PermissionAllow), start}, start, false, "start"},
		{"deny records not_started", []func(States) (States, error){perm(PermissionDeny)}, out(OutcomeNotStarted), true, ""},
		{"succeeded needs start evidence", []func(States) (States, error){perm(PermissionAllow)}, out(OutcomeSucceeded), false, "outcome"},
		{"started succeeds", []func(States) (States, error){perm(PermissionAllow), start}, out(OutcomeSucceeded), true, ""},
		{"started becomes unknown", []func(States) (States, error){perm(PermissionAllow), start}, out(OutcomeUnknown), true, ""},
		{"started never not_started", []func(States) (States, error){perm(PermissionAllow), start}, out(OutcomeNotStarted), false, "outcome"},
		{"succeeded never unknown", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeSucceeded)}, out(OutcomeUnknown), false, "outcome"},
		{"failed never unknown", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeFailed)}, out(OutcomeUnknown), false, "outcome"},
		{"not_started never unknown", []func(States) (States, error){perm(PermissionDeny), out(OutcomeNotStarted)}, out(OutcomeUnknown), false, "outcome"},
		{"succeeded never failed", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeSucceeded)}, out(OutcomeFailed), false, "outcome"},
		{"unknown never failed without a reconciliation", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown)}, out(OutcomeFailed), false, "outcome"},
		{"unknown never succeeded without a reconciliation", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown)}, out(OutcomeSucceeded), false, "outcome"},
		{"unknown reconciled to failed", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown), deliver(DeliveryRecorded), deliver(DeliveryProjected)}, reconcile(OutcomeFailed), true, ""},
		{"unknown reconciled to succeeded", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown), deliver(DeliveryRecorded), deliver(DeliveryProjected)}, reconcile(OutcomeSucceeded), true, ""},
		{"reconciliation waits for delivery", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown), deliver(DeliveryRecorded)}, reconcile(OutcomeFailed), false, "outcome"},
		{"reconciliation never not_started", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown), deliver(DeliveryRecorded), deliver(DeliveryProjected)}, reconcile(OutcomeNotStarted), false, "outcome"},
		{"a known result is never reconciled", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeSucceeded), deliver(DeliveryRecorded), deliver(DeliveryProjected)}, reconcile(OutcomeFailed), false, "outcome"},
		{"reconciled again the same is idempotent", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown), deliver(DeliveryRecorded), deliver(DeliveryProjected), reconcile(OutcomeFailed)}, reconcile(OutcomeFailed), true, ""},
		{"reconciled once only", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown), deliver(DeliveryRecorded), deliver(DeliveryProjected), reconcile(OutcomeFailed)}, reconcile(OutcomeSucceeded), false, "outcome"},
		{"a reconciled outcome never changes", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown), deliver(DeliveryRecorded), deliver(DeliveryProjected), reconcile(OutcomeFailed)}, out(OutcomeSucceeded), false, "outcome"},
		{"the reconciled receipt's unknown changes nothing", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown), deliver(DeliveryRecorded), deliver(DeliveryProjected), reconcile(OutcomeFailed)}, out(OutcomeUnknown), true, ""},
		{"unknown never not_started", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeUnknown)}, out(OutcomeNotStarted), false, "outcome"},
		{"same outcome is idempotent", []func(States) (States, error){perm(PermissionAllow), start, out(OutcomeSucceeded)}, out(OutcomeSucceeded), true, ""},
		{"record needs an outcome", nil, deliver(DeliveryRecorded), false, "delivery"},
		{"recorded", []func(States) (States, error){perm(PermissionDeny), out(OutcomeNotStarted)}, deliver(DeliveryRecorded), true, ""},
		{"projected before recorded", []func(States) (States, error){perm(PermissionDeny), out(OutcomeNotStarted)}, deliver(DeliveryProjected), false, "delivery"},
		{"delivery never back", []func(States) (States, error){perm(PermissionDeny), out(OutcomeNotStarted), deliver(DeliveryRecorded), deliver(DeliveryProjected)}, deliver(DeliveryRecorded), false, "delivery"},
		{"no permission change after outcome", []func(States) (States, error){perm(PermissionDeny), out(OutcomeNotStarted)}, perm(PermissionAllow), false, "permission"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustStates(t, tc.setup...)
			got, err := tc.step(s)
			if tc.ok {
				if err != nil {
					t.Fatalf("want legal, got %v", err)
				}
				return
			}
			var te *TransitionError
			if !errors.As(err, &te) {
				t.Fatalf("want *TransitionError, got %v", err)
			}
			if te.Dimension != tc.dim {
				t.Fatalf("dimension %q, want %q", te.Dimension, tc.dim)
			}
			if got != s {
				t.Fatalf("a refused transition changed the state: %+v -> %+v", s, got)
			}
		})
	}
}

func TestStatesJSONRefusesUnknownValues(t *testing.T) {
	var s States
	if err := json.Unmarshal([]byte(`{"permission":"maybe","outcome":"","delivery":"pending"}`), &s); err == nil {
		t.Fatal("unknown permission accepted")
	}
	if err := json.Unmarshal([]byte(`{"permission":"allow","outcome":"succeeded","delivery":"projected","started":true}`), &s); err != nil {
		t.Fatal(err)
	}
	if !s.Terminal() {
		t.Fatal("succeeded+projected should be terminal")
	}
}
