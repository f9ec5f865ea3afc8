// Package actionflow is the action lifecycle as one flow of idempotent
// steps, each the body of one Lambda handler and one state of the state
// machine (statemachines/action-lifecycle.asl.json):
//
//	Submit (API)     prepare: check the arguments (tool contract, workspace boundary), put the action
//	                 intent once, start its execution (name = action id)
//	Authorize        decide permission bound to action, execution, tool call, policy version, args digest;
//	                 arguments prepare found invalid are refused first, before the permission engine
//	ApprovalStep     store the task token on a fresh pending approval (await) / record expiry (expire)
//	DecideApproval   (API) a human's decision, applied exactly once, completes the wait
//	Authorize        revalidate after the approval, immediately before dispatch
//	Dispatch         attempt lease, start evidence, executor (sync) or host task publication (publish)
//	Dispatch ask     AwaitAnswer (question.go): store the task token on a fresh pending question of the
//	                 next generation, nothing starts; expire_question records the 24 h timeout
//	AnswerQuestion   (API) a human's answer or skip, one command (command_id), applied once, completes
//	                 the wait; Dispatch sync then writes start evidence and the result from the answer
//	HostStart/HostResult (API) the host worker's claim and result, fenced by the attempt lease;
//	HostHeartbeat (API) its liveness while the tool runs (SendTaskHeartbeat of the DispatchHost wait)
//	Record           seal the write-once receipt from durable evidence; then, in one transaction,
//	                 fold it into the checkpoint, move the action to its outcome and delivery
//	                 projected and append action.projected; then publish that event (a failed
//	                 publish is transient: the repeated step finds the action projected and
//	                 publishes the stored event again). The last state of the machine.
//	Project          (recovery, and executions of an earlier revision's definition, which has a
//	                 Project state) the same from a sealed receipt; on an action projected
//	                 already it only publishes the stored event again
//	Reconcile        (API) a person's resolution of a delivered unknown outcome, applied once
//	                 (reconcile.go): record beside the receipt, reconciled states, checkpoint fold
//	                 and action.reconciled event in one transaction; the receipt stays unknown
//
// Execution control and recovery (packages control and recovery) use the
// exported hooks: CancelAction (close an unstarted action, fail its wait),
// Recover (the record step from durable evidence only), ResendDecision /
// ResendAnswer / ResendResult (complete a wait again from a stored
// decision, answer or result, only the action's current wait),
// CloseAbandonedHost (answer unknown the wait of a host task whose
// in-process worker died with an earlier process),
// SaveExecution (fenced owner writes), the index listings (OpenActions,
// OpenExecutions, UnresolvedActions), AppendEvent, and the execution tree:
// CreateChild (a Fork/Retry child or a child task, in one transaction with
// its parent's link EXEC#<parent>/CHILD#<child> and a Check of the
// parent's version, so no child appears beside a parent that moved to
// cancelling), Children (the links, read strongly consistently),
// StartChildTask, and the saved points: every checkpoint version is kept
// immutably as EXEC#<id>/CKPT#<version>, and they are the checkpoint:
// writing the next version is one put-once of its item (the
// compare-and-swap on the version) in the transaction of the change it
// folds, and GetCheckpoint reads the newest (one Query; a legacy head
// item EXEC#<id>/CKPT of stores written before is read when it is newer,
// savedpoints.go); SavedPointState reads any of them (0 is the start) and
// SavedPoints lists them; and TransactWithEvent (a record and its event in one
// transaction: model requests). CloseUnstarted, which every end of an
// execution passes through (End, the iteration limit, Cancel), also has
// Config.RunWork close the run's other open work (the RunCloser port: model
// requests left open are closed incomplete by package modelreq).
// Admission is where control takes effect inside the flow: the initial
// authorize refuses new actions of a paused, cancelled or ended execution
// (execution_control reasons; an ended one's detail names its end reason),
// counts the call against the execution's iteration limit (the call that
// would exceed it is refused with iteration_limit and ends the execution
// failed, reason iteration_limit, its unstarted actions closed) and
// consumes a Step's budget.
//
// Revisions (revisions.go; specification 003, "Function versions and
// durable continuation"): with Config.Revisions set, every execution
// records the revision it started on (StartedRevision), the one its next
// action starts on (ActiveRevision) and its policy (RevisionPolicy:
// keep_original, the default, or use_latest; Config.RevisionPolicy is the
// default of new executions, the set_revision_policy command of package
// control changes it). Starting an action's machine is the safe
// boundary where the revision is selected: keep_original starts it on
// the active revision's version; use_latest adopts the live revision
// first when that can resume the active one (recorded on the execution
// with execution.revision_adopted, and kept by later keep_original
// selections). An incompatible live revision, or an active one that can
// no longer be loaded, pauses the execution (PauseByRevision, reason
// revision_incompatible or revision_unavailable, RevisionBlock with the
// differences) and holds the action unstarted; it never falls back to
// another revision and never restarts anything; Continue (StartHeld)
// selects again. An approved approval is the other boundary (no start
// evidence yet): keep_original completes the waiting machine, use_latest
// with a newer compatible revision hands the action off (Action.Handoff:
// the old machine is stopped before it revalidates, a machine named
// <action>-r<n> starts on the adopted revision and its approval step
// completes its own wait from the approved approval), a block holds it
// with the approval kept approved (ResendDecision does not send it).
// The action records the revision its machine runs on (for a running
// keep_original execution already at Submit: it is the active revision,
// which only use_latest changes, so a deployment before the start does
// not move it); its receipt and the checkpoint fold keep it
// (provenance); receipts sealed under an older revision stay as they are
// and are never recomputed.
//
// Two durable markers on the action close races: Result (the dispatch
// result, written by the owning attempt before the state machine hears of
// it) and Closed (written before a not_started receipt is sealed or when
// the execution is cancelled; a dispatch claim on a closed action is
// refused). Delivery past pending says the checkpoint holds the receipt:
// the record step moves it to projected in the transaction that folds the
// receipt (an earlier revision's record step set recorded, and its Project
// state projected).
//
// Each step reads its state from the store, never from the state
// machine's payload, so a repeated or late invocation cannot act on stale
// data. The three states only change through package lifecycle.
//
// What it must never do: call an executor for an action whose start
// evidence exists; turn a known result into unknown; record not_started for
// a dispatched operation; treat an expired approval as approval or an
// expired, cancelled or declined question as answered; let an agent
// principal decide an approval, answer a question or reconcile an outcome. It imports no AWS or Lambda package;
// adapters implement its ports (ports.go).
package actionflow
