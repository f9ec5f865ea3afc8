// Package replay owns policy replay: a dry run of a candidate policy
// against what a session's agents actually did. Given a candidate
// document, the sessions and a window, Run decides every recorded action
// of the window again under the candidate and reports how the decisions
// would have changed: counts per transition (allow→deny, ask→allow,
// deny→allow, …) and the changed actions with both reasons.
//
// It reuses the live permission engine (permission.Engine.Replaying): hard
// constraints and protected paths, grants, modes, the sandbox and the Bash
// analysis decide exactly as live, in the trusted context the decider
// gives the action (Context). The automatic reviewer is never called
// again: an action whose live decision carries the reviewer's verdict
// gets that verdict back (VerdictRecorded); one that has none (its live
// decision came from a rule or a mode, and the candidate sends it to
// review) gets the built-in deterministic reviewer's, without its model
// (VerdictDeterministic: the same answer live would give, or unproven
// where live would have asked a model). The refusal counters of auto mode
// are simulated in memory, in action order, per session.
//
// The live decision compared against is the engine's own record of the
// action's first decision (Action.InitialDecision when a revalidation
// replaced it). Actions the lifecycle refused before the engine was asked
// (invalid arguments, execution control, iteration limits, repeat
// suppression) and actions not decided yet are counted as skipped.
//
// Nothing is written but the report itself (REPLAY#<id>/META) and, per
// covered session, the last replay of each candidate digest
// (REPLAYS#<session>/<digest>), which a policy change that requires a
// replay (the session option require_replay) looks up with Latest. Runs
// read every action of the covered sessions once; no counter, approval,
// event or model request is touched.
//
// It imports no AWS package and nothing above the lifecycle's domain.
package replay
