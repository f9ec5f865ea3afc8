// Package recovery is the recovery sweeper and restart continuation
// (specification 000 "Receipts and recovery"; 003 sections 4-5,
// "Automatic continuation after interruption", "Engineering reference").
//
// # The sweeper
//
// Sweep reads every open action (actionflow's sparse open index) and
// classifies it from durable evidence only: the action's start evidence and
// stored result, its receipt, the checkpoint, its approval wait, and the
// status of its state machine (Machines: DescribeExecution). SweepAction
// documents the table. In short: a receipt without a checkpoint fold is
// folded from the receipt and projected, never executed again; a receipt
// and checkpoint without projection (an action a machine of an earlier
// revision left recorded) is projected only; a projected action whose
// machine failed afterwards (the record step's publish did not complete)
// has its stored action.projected event published again; start evidence
// without a trustworthy result once the machine ended is sealed unknown
// (reconciliation required) and never re-dispatched; a machine that never
// started is started (nothing was dispatched, and the start is idempotent
// by name), unless its execution's revision policy blocks it: then it is
// held (reported "held", nothing started) until Continue; a durable approval decision or host result whose SendTask* was
// lost is sent again; a host task claimed by the in-process worker of an
// earlier process (start evidence, no result: that worker died with its
// process) has its dispatch wait answered unknown at once, so the first
// sweep after a start-up records it; a wait whose machine ended is
// expired, never approved. Running machines are otherwise left to their
// own steps (a remote worker's death is the DispatchHost heartbeat's to
// notice: 60 s without SendTaskHeartbeat ends the action unknown). Repeated sweeps
// are idempotent. The sweeper never calls an executor, never changes a
// sealed receipt, never infers "not started" from tool text (only from the
// absence of start evidence, which dispatch writes before any executor call,
// sealed behind a closure so no late claim can start it) and never marks a
// task or an execution completed.
//
// A sweep also finishes executions: commands that were saved but not
// applied (control.Reconcile), cancellations waiting for their last
// receipt, and every pause owned by restart recovery that has not expired
// (blocked, or a shutdown pause no start-up could decide): each is decided
// again with the start-up rules and the same command identities, so an
// execution blocked by an unresolved effect continues at the next sweep
// once the effect is known, without a restart.
//
// # Idle timeout
//
// A sweep also ends executions whose client vanished (abandonIfIdle). An
// execution is idle when all of these hold:
//
//   - it is running and has an idle timeout (idle_timeout_seconds, copied
//     from its session policy when it started; 0: never idle). A paused
//     execution (a person's pause, a fork waiting for Continue, restart
//     recovery's pause), a cancelling one and an ended one are not;
//   - no action of it is open: none deciding, waiting for an approval,
//     dispatched, running or being recorded (an action in flight or a
//     person's approval is not the client's idleness);
//   - no outcome of it is unknown and waiting for a person's
//     reconciliation, and no control command for it is saved and not yet
//     applied;
//   - nothing happened for the timeout: now minus IdleSince (the latest of
//     the execution's start, its last_activity, its last write, and its
//     checkpoint's last fold, i.e. the last tool result or reconciliation)
//     is at least the timeout. A new action keeps it busy while it is open
//     and moves the checkpoint when its result is recorded; a model
//     request counts when it is recorded as the execution's last_activity.
//
// Then the sweeper sends an End command (failed, reason abandoned, by the
// system principal, id "abandoned.v<execution version>") against the
// version it judged. The command service decides the race: a Cancel saved
// before it is applied first and the End rejected; any write to the
// execution since (a command, a counted iteration, new activity) makes it
// stale and nothing happens. Its application is End's: unstarted actions
// closed, pending approvals cancelled, started actions left to finish and
// record, execution.ended appended; later calls are refused with
// execution_ended. A call submitted in the same instant as the end is
// refused that way (it never half-runs).
//
// Triggers: the EventBridge schedule and Step Functions status-change
// events (FAILED, TIMED_OUT, ABORTED → SweepAction of that action) in AWS
// (functions/recover); Startup and a ticker (Run) in the embedded stack.
//
// # Restart continuation (embedded stack)
//
// Startup runs once per process (attempt) before it admits work (it needs
// only the store); Shutdown runs after the process stopped dispatching,
// before it exits. See their docs for the rules: the
// restart window (the session's own restart_window_seconds, read through
// Config.Windows, else Config.Window: -1 unlimited stored as a null deadline,
// 0 disabled, positive measured from the shutdown intent or the abandoned
// attempt's last durable activity, never extended by restarting again);
// only a pause owned by restart recovery resumes automatically; user
// pause, cancellation, an unanswered approval, unresolved external effects,
// stale checkpoints and incompatible revisions stay explicit; expiry keeps
// the checkpoint and deletes nothing. Decisions are system commands
// (control.SubmitOwned) with fixed ids ("restart.<attempt>.v<execution
// version>", "shutdown.<attempt>"; the embedded stack's sweeps decide
// under the attempt of its start-up), saved before they are applied and recorded in the
// session's canonical event log, taken under the execution lease by this
// attempt; a decision that changes nothing is not written, so repeated
// start-ups are idempotent. Shutdown retries a racing execution write at
// most three times within its attempt.
//
// Order for the embedded stack: Startup → engine Start (resumes its
// executions) → Run (sweeps at once, then on a ticker; wire the engine's
// status-change callback to OnStatusChange) → API admits … on stop: API
// stops admitting → engine stops dispatching → Shutdown → exit.
//
// What it must never do: dispatch, call an executor, declare an operation
// that may have started not_started, turn a known result unknown, resume a
// user or fork pause, end an execution over a Cancel or while something of
// it waits on someone else, or import AWS packages.
package recovery
