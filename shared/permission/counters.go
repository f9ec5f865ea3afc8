package permission

import (
	"context"
	"fmt"

	"github.com/openprogram/lifecycle/shared/store"
)

// CounterStore is the part of store.Store the refusal fallback needs.
type CounterStore interface {
	ApplyCounter(ctx context.Context, key store.CounterKey, member string, op store.CounterOp) (store.Counter, bool, error)
	GetCounter(ctx context.Context, key store.CounterKey) (store.Counter, error)
}

var _ CounterStore = store.Store(nil)

// Thresholds of the refusal fallback.
type Thresholds struct {
	// Consecutive classifier blocks with no allowed action between them.
	Consecutive int64
	// Total classifier blocks in the accounting epoch.
	Total int64
}

// DefaultThresholds are the documented 3 consecutive / 20 total.
var DefaultThresholds = Thresholds{Consecutive: 3, Total: 20}

// reached reports whether c triggers the fallback, and which threshold
// (the total wins when both are reached: completing its approval resets
// both counts).
func (t Thresholds) reached(c store.Counter) (Code, bool) {
	switch {
	case c.Total >= t.Total:
		return CodeFallbackTotal, true
	case c.Consecutive >= t.Consecutive:
		return CodeFallbackConsecutive, true
	}
	return "", false
}

// CounterKey is the counter of a session in the accounting epoch of a
// policy version: a new policy version starts fresh counts.
func CounterKey(session string, policyVersion string) store.CounterKey {
	return store.CounterKey{SessionID: session, Epoch: policyVersion}
}

func (e *Engine) count(ctx context.Context, x *evalCtx, op store.CounterOp) (store.Counter, error) {
	key := CounterKey(string(x.req.Trusted.SessionID), x.pol.Version)
	c, _, err := e.cfg.Counters.ApplyCounter(ctx, key, string(x.req.Call.ActionID), op)
	if err != nil {
		return store.Counter{}, fmt.Errorf("refusal counter %s/%s: %s for action %s: %w", key.SessionID, key.Epoch, op, x.req.Call.ActionID, err)
	}
	return c, nil
}

// countAllow resets the consecutive count after an allowed action in auto
// mode (the only mode the counters concern).
func (e *Engine) countAllow(ctx context.Context, x *evalCtx) error {
	if x.pol.Mode != ModeAuto || e.cfg.Counters == nil {
		return nil
	}
	_, err := e.count(ctx, x, store.CounterAllow)
	return err
}

// ApprovalCompleted records a human's answer to the approval wait of a
// fallback decision in the refusal counters:
//
//   - approved: the action is an approved fallback action, so the
//     consecutive count resets (CounterAllow);
//   - approved or declined, when the total threshold triggered the wait:
//     the threshold-triggered approval is complete, so both counts reset
//     (CounterResetTotal);
//   - expired, cancelled, superseded or pending: nobody answered, nothing
//     changes.
//
// Both updates are keyed by the action id, so calling it again (a resumed
// handler) changes nothing. Revalidate calls it for approved evidence; the
// approval handler should call it for declined evidence. Decisions that are
// not fallbacks are ignored.
func (e *Engine) ApprovalCompleted(ctx context.Context, d Decision, ev ApprovalEvidence) error {
	if !d.Fallback {
		return nil
	}
	if e.cfg.Counters == nil {
		return fmt.Errorf("approval %s of action %s: no refusal counters configured", ev.ApprovalID, d.ActionID)
	}
	if ev.ActionID != d.ActionID || ev.ArgsDigest != d.ArgsDigest || ev.PolicyVersion != d.PolicyVersion {
		return fmt.Errorf("approval %s is for action %s (%s, policy %s), not for action %s (%s, policy %s)",
			ev.ApprovalID, ev.ActionID, ev.ArgsDigest, ev.PolicyVersion, d.ActionID, d.ArgsDigest, d.PolicyVersion)
	}
	key := CounterKey(string(d.SessionID), d.PolicyVersion)
	apply := func(op store.CounterOp) error {
		if _, _, err := e.cfg.Counters.ApplyCounter(ctx, key, string(d.ActionID), op); err != nil {
			return fmt.Errorf("approval %s of action %s: refusal counter %s: %w", ev.ApprovalID, d.ActionID, op, err)
		}
		return nil
	}
	switch ev.Status {
	case ApprovalApproved:
		if err := apply(store.CounterAllow); err != nil {
			return err
		}
	case ApprovalDeclined:
	default:
		return nil
	}
	if d.Reason.Code == CodeFallbackTotal {
		return apply(store.CounterResetTotal)
	}
	return nil
}

// Counter reads the refusal counter of a session under a policy version
// (for display and tests).
func (e *Engine) Counter(ctx context.Context, session string, policyVersion string) (store.Counter, error) {
	if e.cfg.Counters == nil {
		return store.Counter{}, nil
	}
	c, err := e.cfg.Counters.GetCounter(ctx, CounterKey(session, policyVersion))
	if err != nil {
		return store.Counter{}, fmt.Errorf("read refusal counter %s/%s: %w", session, policyVersion, err)
	}
	return c, nil
}
