// Package lifecycle owns the three independent states of an action —
// permission (allow/ask/deny), outcome (not_started/succeeded/failed/unknown)
// and delivery (pending/recorded/projected) — and is the one place where their
// legal transitions are enforced. An illegal transition is a *TransitionError.
//
// The rules that never bend: a known result (succeeded, failed, not_started)
// never becomes unknown or anything else; an operation with execution-start
// evidence never becomes not_started; a permission rejection is an outcome of
// not_started, which is not task completion.
//
// It imports no AWS or Lambda package.
package lifecycle
