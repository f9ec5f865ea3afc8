// Package control is the one command service of execution control: Pause,
// Continue, Step, Steer, Cancel, Fork and Retry (specification 003,
// sections 4 and 5, "Engineering reference"), End (the execution ends:
// completed, or failed with a reason code), plus the two system commands
// restart recovery records through it (Shutdown, Restart). Every transport
// (HTTP API, CLI, recovery) calls Service.Submit or Service.SubmitOwned.
//
// # Saved, then applied
//
// A command is saved before anything acts on it: the item
// EXEC#<execution_id>/CMD#<command_id> is put once, guarded by the
// execution's META version == expected_version in the same conditional
// write (store.PutOnceIfVersion), with status "accepted". A stale
// expected_version saves nothing (*StaleVersionError carrying expected and
// actual); so does a control the execution does not advertise
// (*UnsupportedError with the reason). The same command id with the same
// body returns the stored record whatever happened since; with another body
// it is a conflict (actionflow.ConflictError "command_id_reused").
//
// "applied" means it took effect. Only the execution's owner applies: the
// attempt holding the lease EXEC#<execution_id>/LEASE (store.AcquireLease,
// resource "EXEC#<id>"). There is no long-lived worker per execution in this
// design (Lambda handlers are stateless; the embedded stack's handlers are
// too), so an execution is owned only while an activation works on it: the
// command service, after saving a command, takes the lease as a fresh
// attempt and applies every accepted command (cancellations first), then
// releases it. If another attempt holds the lease the record stays
// accepted and that owner, or the recovery sweeper once the lease lapses
// (Reconcile), applies it. Every execution write of an owner is a fenced
// compare-and-swap, so after a takeover an old owner's late write is
// rejected by the store.
//
// Applying is one fenced compare-and-swap of the execution that names the
// command (Execution.LastCommand), then the command's idempotent effects,
// then the record's completion (applied with the result version, or
// rejected with the reason). A crash between them is finished by the next
// application, which recognises its own transition. Completion is
// idempotent when a racing applier (reconciliation) won: after a
// compare-and-swap conflict only the same completion already stored, for
// the same execution and result version, is accepted; any other stored
// completion is a *CompletionConflictError, never swallowed.
//
// # What each control does
//
// Pause: paused (owner "user"); admission of new actions stops (actionflow's
// initial authorize refuses them with execution_paused); an admitted action
// may finish. Continue: running again from saved progress. Step: running
// with a budget of N admitted actions (default 1); the last admission
// pauses again. Steer: appends instructions (bounded) for work not yet run.
// Cancel: cancelling, which refuses every new admission and revalidation;
// then every unstarted action is closed and its wait failed (a pending
// approval becomes cancelled); started actions finish and record their
// result (cancellation cannot undo what began, and stopping a state
// machine mid-dispatch would turn a result about to be known into unknown,
// so StopExecution is never used); its execution descendants (forks,
// retries, child tasks, recursively) each get a Cancel of their own
// (descendants.go); once every action has a receipt the execution is
// cancelled. Cancellation takes precedence: it is applied
// first, and it is never refused because another command moved the
// version: a Cancel is saved against the version it finds (re-read after a
// lost race), so it never gets a *StaleVersionError, and on an execution
// already cancelling or cancelled it is applied as already in effect
// (result version = the current one). Every other control is refused on a
// cancelling execution, and a stale one still gets *StaleVersionError.
// Submit keeps trying the lease briefly when another activation holds it,
// and ApplyPending looks for accepted commands again after releasing the
// lease, so a command saved while the owner was finishing is not left
// waiting for the sweeper. Pause, Continue, Step and Steer are
// rejected at application when the execution moved past their expected
// version. Fork/Retry create an independent child execution (id derived
// from source and command id, so re-applying finds it; same session, run,
// revision and iteration limit; parent = source) from an allowed saved
// point: any checkpoint version the source wrote (each is kept immutably,
// written with the checkpoint itself: actionflow/savedpoints.go), or 0,
// the start (Retry's default; Fork's is the current checkpoint). A version
// above the current checkpoint, or one written before saved points were
// kept, is refused before anything is saved (*actionflow.SavedPointError;
// HTTP 409 saved_point_unavailable). The source and its history are
// untouched. The child is created in one transaction with a Check of the
// source's version as read (actionflow.CreateChild), decided again when
// the source moved. Agent chat children start paused (owner "fork") and
// need Continue; job and function children start running. A Fork starts a
// new branch, a Retry stays on the source's branch.
//
// End: completed, or failed with a reason code (iteration_limit,
// model_error, aborted, ...: lower-case letters, digits, underscores) and
// a message; the execution records it (Execution.End, with the sender's
// role). It applies to a running or paused execution, is rejected when the
// execution moved past its expected version, and is refused on a
// cancelling or cancelled one (cancellation takes precedence; a pending
// Cancel is applied first). Once applied, authorize refuses new actions
// (execution_ended, the detail names the reason), every unstarted action
// is closed and its wait failed (a pending approval becomes cancelled),
// and started actions finish and record. Controls advertises End on a
// running or paused execution (the Activity UI offers it as "End…").
//
// SetRevisionPolicy (set_revision_policy, payload {"policy":
// "keep_original"|"use_latest"}) changes which revision the execution's
// later actions start on (actionflow, revisions.go). It is a setting,
// not an advertised control: accepted on a running or paused execution,
// rejected at application when the execution moved past its expected
// version, refused while cancelling (cancellation takes precedence); it
// never starts, pauses or continues anything. Continue may also carry
// {"revision_policy": ...}; it lifts a revision block and starts the
// actions the block held (StartHeld), which select their revision again.
//
// Controls(e) is what an execution advertises now, by status and kind;
// Check(e, c) explains a refusal. A cancelling execution advertises
// nothing, not even Fork: a child created while the cancellation reaches
// the descendants would escape it.
//
// # Cancel and descendants
//
// See descendants.go: each open child gets a Cancel saved through this
// service under a command id derived from (parent, the parent's Cancel,
// child), applied by the child's owner (at once when its lease is free);
// ended children are left alone but walked through; the applied Cancel's
// record lists what it reached (Record.Descendants; Record.Cascade on each
// derived Cancel). Children are listed by a strongly consistent query of
// the parent's partition after its cancelling version was written, and a
// child is only created at a parent version that is not cancelling, so
// none escapes; a Fork or Retry saved before the Cancel and applied after
// it is rejected (cancellation takes precedence). A managed process has
// its own control (not here).
//
// Principals: a human of the owning session or an admin sends user
// controls; only the system sends Shutdown/Restart; an agent principal may
// read and may End its own session's executions, but never send another
// control (routing an agent's request through the API does not grant
// human privileges). Another session's execution is not found.
//
// Events: command.accepted, command.applied, command.rejected,
// execution.created (Fork/Retry child), execution.ended (End; also
// written by actionflow when the iteration limit ends an execution) and
// execution.cancelled are appended
// to the session's canonical event log.
//
// What it must never do: apply a command that was not saved first; let a
// non-owner write the execution; resume a user pause, a fork pause or a
// cancellation on its own; change a sealed receipt; import AWS packages.
package control
