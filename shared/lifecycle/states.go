package lifecycle

import (
	"encoding/json"
	"fmt"
)

// Permission answers: may this exact operation begin under current authority?
type Permission string

const (
	PermissionUndecided Permission = ""
	PermissionAllow     Permission = "allow"
	PermissionAsk       Permission = "ask"
	PermissionDeny      Permission = "deny"
)

// Outcome answers: what is known about actual execution? The zero value
// (OutcomeOpen) means no outcome has been established yet: the action has
// not been decided, or is waiting, or is running.
type Outcome string

const (
	OutcomeOpen       Outcome = ""
	OutcomeNotStarted Outcome = "not_started"
	OutcomeSucceeded  Outcome = "succeeded"
	OutcomeFailed     Outcome = "failed"
	// OutcomeUnknown: the operation may have started and its result cannot be
	// established; only this outcome requires effect reconciliation.
	OutcomeUnknown Outcome = "unknown"
)

// Delivery answers: is the result durably stored and reflected in
// conversation and UI state?
type Delivery string

const (
	DeliveryPending   Delivery = "pending"
	DeliveryRecorded  Delivery = "recorded"
	DeliveryProjected Delivery = "projected"
)

// Known reports whether o is an established result (succeeded, failed or
// not_started). Known results are final.
func (o Outcome) Known() bool {
	return o == OutcomeSucceeded || o == OutcomeFailed || o == OutcomeNotStarted
}

// Valid reports whether p is one of the defined values (undecided included).
func (p Permission) Valid() bool {
	switch p {
	case PermissionUndecided, PermissionAllow, PermissionAsk, PermissionDeny:
		return true
	}
	return false
}

// Valid reports whether o is one of the defined values (open included).
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeOpen, OutcomeNotStarted, OutcomeSucceeded, OutcomeFailed, OutcomeUnknown:
		return true
	}
	return false
}

// Valid reports whether d is one of the defined values.
func (d Delivery) Valid() bool {
	switch d {
	case DeliveryPending, DeliveryRecorded, DeliveryProjected:
		return true
	}
	return false
}

// States are the three independent states of one action. The only way to
// change them is through the With* methods below, which enforce the legal
// transitions in one place.
type States struct {
	Permission Permission `json:"permission"`
	Outcome    Outcome    `json:"outcome"`
	Delivery   Delivery   `json:"delivery"`
	// Started is execution-start evidence: written immediately before the
	// executor is called. Once true it never becomes false, and the outcome can
	// never become not_started.
	Started bool `json:"started"`
	// Reconciled: the outcome was unknown and a human's reconciliation
	// established it (WithReconciliation). The sealed receipt still says
	// unknown; this is what lets the two differ without either changing.
	Reconciled bool `json:"reconciled,omitempty"`
}

// NewStates is the state of a freshly prepared action.
func NewStates() States { return States{Delivery: DeliveryPending} }

// TransitionError is an illegal state transition.
type TransitionError struct {
	Dimension string // "permission", "outcome", "delivery", "start"
	From, To  string
	Reason    string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("illegal %s transition %q -> %q: %s", e.Dimension, e.From, e.To, e.Reason)
}

func show(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// WithPermission records a permission decision.
//
// Legal: undecided -> allow|ask|deny; ask -> allow|deny (an approval, then
// revalidation); allow -> deny only while nothing started (revalidation or a
// revocation before dispatch); the same value again (idempotent). A deny is
// final, and nothing changes permission once execution started.
func (s States) WithPermission(p Permission) (States, error) {
	fail := func(reason string) (States, error) {
		return s, &TransitionError{Dimension: "permission", From: show(string(s.Permission)), To: show(string(p)), Reason: reason}
	}
	if !p.Valid() || p == PermissionUndecided {
		return fail("not a decision")
	}
	if p == s.Permission {
		return s, nil
	}
	if s.Started {
		return fail("execution already started")
	}
	if s.Outcome != OutcomeOpen {
		return fail("outcome already established")
	}
	switch s.Permission {
	case PermissionUndecided:
	case PermissionAsk:
		if p == PermissionAsk {
			return fail("already asking")
		}
	case PermissionAllow:
		if p != PermissionDeny {
			return fail("an allow can only be revoked to deny")
		}
	case PermissionDeny:
		return fail("a deny is final")
	}
	s.Permission = p
	return s, nil
}

// WithStart records execution-start evidence. Only an allowed action with no
// outcome can start; starting twice is illegal (dispatch never retries after
// start evidence exists).
func (s States) WithStart() (States, error) {
	fail := func(reason string) (States, error) {
		return s, &TransitionError{Dimension: "start", From: fmt.Sprint(s.Started), To: "true", Reason: reason}
	}
	switch {
	case s.Started:
		return fail("start evidence already exists; a started operation is never dispatched again")
	case s.Permission != PermissionAllow:
		return fail("permission is " + show(string(s.Permission)) + ", not allow")
	case s.Outcome != OutcomeOpen:
		return fail("outcome already established as " + string(s.Outcome))
	}
	s.Started = true
	return s, nil
}

// WithOutcome records what is known about execution.
//
// Legal: open -> any outcome (not_started only without start evidence);
// the same value again (idempotent). A known result never becomes unknown,
// nor any other result, and a started operation never becomes not_started.
// Unknown leaves only through WithReconciliation; on a reconciled action
// the sealed receipt's unknown is what was reconciled, so WithOutcome(unknown)
// is a no-op there (a repeated record or project step changes nothing).
func (s States) WithOutcome(o Outcome) (States, error) {
	fail := func(reason string) (States, error) {
		return s, &TransitionError{Dimension: "outcome", From: show(string(s.Outcome)), To: show(string(o)), Reason: reason}
	}
	if !o.Valid() || o == OutcomeOpen {
		return fail("not an outcome")
	}
	if o == s.Outcome || (s.Reconciled && o == OutcomeUnknown) {
		return s, nil
	}
	if o == OutcomeNotStarted && s.Started {
		return fail("the operation was dispatched (start evidence exists)")
	}
	switch {
	case s.Outcome == OutcomeOpen:
	case s.Outcome.Known():
		return fail("a known result is final")
	case s.Outcome == OutcomeUnknown:
		if o == OutcomeNotStarted {
			return fail("an uncertain operation cannot be declared not started")
		}
		return fail("an unknown outcome is resolved only by a reconciliation")
	}
	if (o == OutcomeSucceeded || o == OutcomeFailed || o == OutcomeUnknown) && !s.Started {
		return fail("no execution-start evidence")
	}
	s.Outcome = o
	return s, nil
}

// WithReconciliation records a human's reconciliation of an unknown
// outcome: the one sanctioned way out of unknown. Legal only from unknown,
// once the unknown outcome is delivered (projected), to succeeded or failed;
// the same reconciled value again is idempotent. It never applies to a
// known result (a known result is final), never yields not_started (the
// operation may have started) and never happens twice with different
// values. Delivery is unchanged: the action stays projected.
func (s States) WithReconciliation(o Outcome) (States, error) {
	fail := func(reason string) (States, error) {
		return s, &TransitionError{Dimension: "outcome", From: show(string(s.Outcome)), To: show(string(o)), Reason: reason}
	}
	switch {
	case o != OutcomeSucceeded && o != OutcomeFailed:
		return fail("a reconciliation establishes succeeded or failed")
	case s.Reconciled && o == s.Outcome:
		return s, nil
	case s.Reconciled:
		return fail("already reconciled as " + string(s.Outcome))
	case s.Outcome != OutcomeUnknown:
		return fail("only an unknown outcome is reconciled")
	case !s.Started:
		return fail("no execution-start evidence")
	case s.Delivery != DeliveryProjected:
		return fail("the unknown outcome is not delivered yet")
	}
	s.Outcome, s.Reconciled = o, true
	return s, nil
}

// WithDelivery moves delivery forward: pending -> recorded -> projected.
// Recording needs an established outcome; the same value again is idempotent.
func (s States) WithDelivery(d Delivery) (States, error) {
	fail := func(reason string) (States, error) {
		return s, &TransitionError{Dimension: "delivery", From: show(string(s.Delivery)), To: show(string(d)), Reason: reason}
	}
	if !d.Valid() {
		return fail("not a delivery state")
	}
	if d == s.Delivery {
		return s, nil
	}
	if rank(d) < rank(s.Delivery) {
		return fail("delivery only moves forward")
	}
	if d != DeliveryPending && s.Outcome == OutcomeOpen {
		return fail("no outcome to deliver")
	}
	if d == DeliveryProjected && s.Delivery != DeliveryRecorded {
		return fail("a result is recorded before it is projected")
	}
	s.Delivery = d
	return s, nil
}

func rank(d Delivery) int {
	switch d {
	case DeliveryRecorded:
		return 1
	case DeliveryProjected:
		return 2
	}
	return 0
}

// Terminal reports whether nothing more will happen to the action without a
// human: the outcome is established and projected.
func (s States) Terminal() bool {
	return s.Outcome != OutcomeOpen && s.Delivery == DeliveryProjected
}

// UnmarshalJSON refuses unknown state values, so a corrupted record is an
// error rather than a silently different state.
func (s *States) UnmarshalJSON(b []byte) error {
	type plain States
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if !p.Permission.Valid() || !p.Outcome.Valid() || !p.Delivery.Valid() {
		return fmt.Errorf("invalid states %s", b)
	}
	*s = States(p)
	return nil
}
