// Package lifecycle owns the three independent states of an action —
// permission (allow/ask/deny), outcome (not_started/succeeded/failed/unknown)
// and delivery (pending/recorded/projected) — and is the one place where their
// legal transitions are enforced. An illegal transition is a *TransitionError.
//
// The rules that never bend: a known result (succeeded, failed, not_started)
// never becomes unknown or anything else; an operation with execution-start
// evidence never becomes not_started; a permission rejection is an outcome of
// not_started, which is not task completion. Unknown is final for every
// step of the flow; the one way out is WithReconciliation (a human
// establishes succeeded or failed after checking the effects), which sets
// States.Reconciled and leaves the sealed unknown receipt as it was.
//
// It imports no AWS or Lambda package.
package lifecycle
