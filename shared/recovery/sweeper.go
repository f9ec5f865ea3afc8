package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// Config wires a Sweeper.
type Config struct {
	Flow     *actionflow.Service
	Control  *control.Service
	Machines Machines
	// Window is the restart window of new interruptions of sessions that
	// set none of their own (default unlimited).
	Window Window
	// Windows, if set, gives each session's own restart window, which
	// decides over Window for that session's executions.
	Windows Windows
	// Revision is the runtime's revision; an execution of another revision
	// continues automatically only if Compatible says so.
	Revision   ids.RevisionID
	Compatible func(ids.RevisionID) bool
	// Run, if set, reports the execution's work recorded outside its own
	// items (the model requests its agent reported), which the idle
	// timeout counts as activity.
	Run    RunActivity
	Logger *slog.Logger
}

// RunActivity reports an execution's work that the lifecycle records
// outside the execution's items: when it last happened and whether some
// of it is still open (package modelreq implements it for the agent's
// model requests). An open model request is the client at work, never
// idleness.
type RunActivity interface {
	RunActivity(ctx context.Context, exec ids.ExecutionID) (last time.Time, open bool, err error)
}

// Sweeper is the recovery sweeper.
type Sweeper struct {
	cfg Config
	log *slog.Logger
	// attempt is the process's attempt once Startup ran (the embedded
	// stack): its sweeps decide restarts under the same attempt, so their
	// command ids follow start-up's. Without one (AWS), each sweep is an
	// attempt of its own.
	attempt atomic.Value // ids.AttemptID
}

// New builds a Sweeper.
func New(cfg Config) (*Sweeper, error) {
	if cfg.Flow == nil || cfg.Control == nil || cfg.Machines == nil {
		return nil, errors.New("recovery: Config.Flow, Control and Machines are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Sweeper{cfg: cfg, log: cfg.Logger}, nil
}

// Did names what the sweeper did to an action.
type Did string

const (
	// Left: nothing to do (its machine is running it, or it is done, or
	// a revision block already holds it: only Continue starts it).
	Left Did = "left"
	// Started: its machine was never started; started now (idempotent by name).
	Started Did = "started"
	// Held: its machine was never started, and starting it now found its
	// execution blocked by its revision policy (an incompatible or
	// unavailable revision): nothing started; the action was added to the
	// revision block's held actions and the execution paused with the
	// differences. Continue (after a compatible deployment, or a policy
	// change) starts it.
	Held Did = "held"
	// Rebuilt: the receipt was sealed but not folded; the checkpoint was
	// rebuilt from the receipt and the action projected (one transaction),
	// then the event published.
	Rebuilt Did = "rebuilt"
	// Projected: receipt and checkpoint stood; only the projection was
	// replayed: an action left recorded (by a machine of an earlier
	// revision, whose Project state failed) was projected and its event
	// published, or an action projected by a machine that failed after
	// (its publish did not complete) had its stored event published again.
	Projected Did = "projected"
	// Sealed: the machine ended without a receipt; one was sealed from
	// durable evidence (unknown if the operation may have started, the
	// stored result if its owner stored one, not_started if it never
	// started), then folded and projected.
	Sealed Did = "sealed"
	// ResentDecision / ResentResult: a durable decision or host result
	// whose SendTask* was lost was sent again.
	ResentDecision Did = "resent_decision"
	ResentResult   Did = "resent_result"
	// ClosedAbandoned: a host task whose worker died with an earlier
	// process (start evidence, no result): its dispatch wait was answered
	// unknown (start_evidence_without_result), so its machine records and
	// projects it. Never re-dispatched.
	ClosedAbandoned Did = "closed_abandoned"
	// ClosedEnded: an unstarted action of an execution that ended
	// (completed, failed, cancelled) whose own closing was lost (a crash
	// between the end and CloseUnstarted) was closed now, its wait failed.
	ClosedEnded Did = "closed_ended"
)

// ActionReport is the sweeper's finding for one action.
type ActionReport struct {
	ActionID    ids.ActionID      `json:"action_id"`
	ExecutionID ids.ExecutionID   `json:"execution_id"`
	Machine     string            `json:"machine"`
	Did         Did               `json:"did"`
	Outcome     lifecycle.Outcome `json:"outcome,omitempty"`
	Error       string            `json:"error,omitempty"`
}

// Report is one sweep.
type Report struct {
	Actions    []ActionReport    `json:"actions"`
	Executions []ExecutionReport `json:"executions,omitempty"`
	Errors     int               `json:"errors"`
}

// Changed counts actions the sweep changed something for.
func (r Report) Changed() int {
	n := 0
	for _, a := range r.Actions {
		if a.Did != Left {
			n++
		}
	}
	return n
}

// Sweep is one pass: every open action, then every execution with pending
// commands, an unfinished cancellation or a blocked restart. A failure on
// one item is reported and the pass goes on; the error is the first one.
// Repeating a sweep is idempotent.
func (s *Sweeper) Sweep(ctx context.Context) (Report, error) {
	var rep Report
	var first error
	note := func(err error) {
		if err != nil {
			rep.Errors++
			if first == nil {
				first = err
			}
		}
	}
	after := ""
	for {
		page, next, err := s.cfg.Flow.OpenActions(ctx, after, store.MaxLimit)
		if err != nil {
			return rep, err
		}
		for _, a := range page {
			ar, err := s.SweepAction(ctx, a.ActionID)
			note(err)
			rep.Actions = append(rep.Actions, ar)
		}
		if next == "" {
			break
		}
		after = next
	}
	attempt, _ := s.attempt.Load().(ids.AttemptID)
	if attempt == "" {
		attempt = ids.NewAttemptID()
	}
	ers, err := s.sweepExecutions(ctx, attempt)
	rep.Executions = ers
	note(err)
	for _, er := range ers {
		if er.Error != "" {
			rep.Errors++
		}
	}
	return rep, first
}

// Run sweeps at once, then every interval until ctx is done (the embedded
// stack's stand-in for the EventBridge schedule; the first sweep is the
// start-up repair of actions, once the engine serves).
func (s *Sweeper) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rep, err := s.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("recovery sweep had failures", "errors", rep.Errors, "first", err)
		} else if n := rep.Changed(); n > 0 {
			s.log.Info("recovery sweep", "changed", n, "open", len(rep.Actions))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// OnStatusChange handles a "Step Functions Execution Status Change" (the
// embedded engine's callback, or its EventBridge event): a FAILED,
// TIMED_OUT or ABORTED machine is swept at once; other statuses are
// ignored. name is the execution name (the action id).
func (s *Sweeper) OnStatusChange(ctx context.Context, name, status string) {
	switch status {
	case "FAILED", "TIMED_OUT", "ABORTED":
	default:
		return
	}
	if err := ids.Validate("execution name", name); err != nil {
		s.log.Warn("status change of an unknown execution", "name", name, "status", status)
		return
	}
	if _, err := s.SweepAction(ctx, ids.ActionID(name)); err != nil {
		s.log.Warn("recovery after "+status+" failed; the schedule retries", "action_id", name, "error", err)
	}
}

// SweepAction classifies one action from durable evidence and repairs it:
//
//	receipt, not in the checkpoint      → rebuild the checkpoint from the receipt, project (never an executor)
//	receipt and checkpoint, not projected → replay the projection only (left recorded by an earlier revision)
//	projected, machine failed           → publish the stored projection event again
//	no receipt, machine never started   → start it (idempotent by name; nothing was dispatched);
//	                                      a revision block holds it instead (Held: not started)
//	no receipt, machine running         → leave it, except: resend a durable approval decision
//	                                      or host result whose completion was lost; answer
//	                                      unknown the wait of a host task whose worker died
//	                                      with an earlier process (start evidence, no result)
//	no receipt, machine ended           → seal the receipt from durable evidence only: start
//	                                      evidence without a stored result is unknown
//	                                      (reconciliation required, never re-dispatched), a
//	                                      stored result is that result, no start evidence is
//	                                      not_started (the action is closed first, so no late
//	                                      claim can start it); then fold and project
//
// While the machine runs, its own steps record and project; the sweeper
// does not race them. It never calls an executor, never changes a sealed
// receipt and never marks a task or an execution completed.
func (s *Sweeper) SweepAction(ctx context.Context, id ids.ActionID) (ActionReport, error) {
	rep, err := s.sweepAction(ctx, id)
	if err != nil {
		rep.Error = err.Error()
		s.log.Warn("recovery: action not repaired", "action_id", id, "machine", rep.Machine, "error", err)
		return rep, fmt.Errorf("sweep action %s: %w", id, err)
	}
	if rep.Did != Left {
		s.log.Info("recovery: action repaired", "action_id", id, "execution_id", rep.ExecutionID, "machine", rep.Machine,
			"did", rep.Did, "outcome", rep.Outcome)
	}
	return rep, nil
}

func (s *Sweeper) sweepAction(ctx context.Context, id ids.ActionID) (ActionReport, error) {
	flow := s.cfg.Flow
	rep := ActionReport{ActionID: id, Did: Left}
	a, err := flow.GetAction(ctx, id)
	if err != nil {
		return rep, err
	}
	rep.ExecutionID, rep.Outcome = a.ExecutionID, a.States.Outcome
	// Its current machine: the action id, or the machine an approval
	// handed it off to (a newer revision's; the old one was stopped).
	ms, err := s.cfg.Machines.Status(ctx, ids.ActionID(a.MachineName()))
	if err != nil {
		return rep, err
	}
	rep.Machine = ms
	in := actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID}
	if a.States.Terminal() {
		if !failed(ms) {
			return rep, nil // done (or the index lagged behind)
		}
		// Projected, and its machine failed after: the record step's
		// transaction stood but its publish did not (or did, unseen).
		// Publish the stored event again; subscribers deduplicate.
		if _, err := flow.Project(ctx, in); err != nil {
			return rep, err
		}
		rep.Did = Projected
		return rep, nil
	}
	rc, err := flow.GetReceipt(ctx, id)
	switch {
	case err == nil:
		if ms == MachineRunning {
			return rep, nil // its record/project steps are on it
		}
		// The action was read before the machine's status: a machine that
		// ended in between projected it itself. Read it again now that the
		// machine's steps are all behind us, or the projection runs twice.
		if a, err = flow.GetAction(ctx, id); err != nil {
			return rep, err
		}
		if a.States.Terminal() {
			return rep, nil
		}
		rep.Outcome = rc.Outcome
		recorded, err := flow.ActionRecorded(ctx, a)
		if err != nil {
			return rep, err
		}
		// Recover and Project both fold (when the checkpoint lacks the
		// receipt), project and publish from the sealed receipt; Recover
		// names the repair in the logs as the recovery's.
		if !recorded {
			if _, err := flow.Recover(ctx, in); err != nil {
				return rep, err
			}
			rep.Did = Rebuilt
			return rep, nil
		}
		// Left recorded: by a machine of an earlier revision, whose own
		// Project state did not complete.
		if _, err := flow.Project(ctx, in); err != nil {
			return rep, err
		}
		rep.Did = Projected
		return rep, nil
	case !errors.Is(err, store.ErrNotFound):
		return rep, err
	}
	if a.Start == nil && a.Closed == nil {
		// An execution that ended closes its unstarted actions in the same
		// step (CloseUnstarted); a crash between the two leaves them open,
		// a pending approval waiting for an answer nobody may give. Close
		// them now, as the end would have.
		if e, err := flow.GetExecution(ctx, a.ExecutionID); err == nil && ended(e.Status) {
			if _, err := flow.CancelAction(ctx, id, "execution_ended"); err != nil {
				return rep, err
			}
			rep.Did = ClosedEnded
			return rep, nil
		}
	}
	switch ms {
	case MachineNone:
		if a.Start == nil {
			// Starting selects the revision first (actionflow's
			// startOnRevision): a revision block holds the action instead
			// of starting it, which is not a start.
			before, err := heldByRevision(ctx, flow, a)
			if err != nil {
				return rep, err
			}
			if err := flow.StartAction(ctx, a); err != nil {
				return rep, err
			}
			held, err := heldByRevision(ctx, flow, a)
			switch {
			case err != nil:
				return rep, err
			case held && before:
				return rep, nil // held already; nothing changed
			case held:
				rep.Did = Held
			default:
				rep.Did = Started
			}
			return rep, nil
		}
		// Start evidence without any machine: seal from the evidence.
	case MachineRunning:
		if a.Start != nil && a.Result != nil && a.Host != nil {
			sent, err := flow.ResendResult(ctx, id)
			if sent {
				rep.Did = ResentResult
			}
			return rep, err
		}
		if a.Start != nil && a.Host != nil {
			// Claimed and no result: only a worker that died with an
			// earlier process is known dead here; a remote worker's death
			// is the DispatchHost heartbeat's to notice.
			sent, err := flow.CloseAbandonedHost(ctx, id)
			if sent {
				rep.Did, rep.Outcome = ClosedAbandoned, lifecycle.OutcomeUnknown
			}
			return rep, err
		}
		if a.Start == nil && a.Decision != nil && a.Decision.Executor == actionflow.ExecutorQuestion {
			// An answer is durable on the question; a lost SendTaskSuccess
			// is sent again from it (only for the action's current wait).
			sent, err := flow.ResendAnswer(ctx, id)
			if sent {
				rep.Did = ResentDecision
			}
			return rep, err
		}
		if a.Start == nil && a.States.Permission == lifecycle.PermissionAsk {
			sent, err := flow.ResendDecision(ctx, id)
			if sent {
				rep.Did = ResentDecision
			}
			return rep, err
		}
		return rep, nil
	}
	// The machine ended (or never existed after dispatch began) without a
	// receipt. A wait still pending can never be answered now: it is
	// expired, never approved.
	if ap, err := flow.GetApproval(ctx, id); err == nil && ap.Status == actionflow.ApprovalPending {
		if _, err := flow.ApprovalStep(ctx, actionflow.StepInput{ActionID: id, ExecutionID: a.ExecutionID, Mode: "expire"}); err != nil {
			return rep, err
		}
	}
	if q, err := flow.QuestionOfAction(ctx, id); err == nil && q.Status == actionflow.QuestionPending {
		if _, err := flow.Dispatch(ctx, actionflow.StepInput{ActionID: id, ExecutionID: a.ExecutionID, Mode: "expire_question"}); err != nil {
			return rep, err
		}
	}
	in.Error = &actionflow.CaughtError{Error: machineError(ms),
		Cause: fmt.Sprintf("the state machine is %s without a receipt; recovered from durable evidence", orNone(ms))}
	out, err := flow.Recover(ctx, in) // seals, folds, projects and publishes
	if err != nil {
		return rep, err
	}
	rep.Outcome, rep.Did = out.Outcome, Sealed
	return rep, nil
}

// failed: the machine ended without succeeding.
func failed(status string) bool {
	return status == "FAILED" || status == "TIMED_OUT" || status == "ABORTED"
}

// machineError names how the machine ended, as the receipt's error code.
func machineError(status string) string {
	switch status {
	case "FAILED":
		return "MachineFailed"
	case "TIMED_OUT":
		return "MachineTimedOut"
	case "ABORTED":
		return "MachineAborted"
	case "SUCCEEDED":
		return "MachineSucceededWithoutReceipt"
	case MachineNone:
		return "MachineMissing"
	}
	return "Machine" + status
}

func orNone(s string) string {
	if s == "" {
		return "missing"
	}
	return s
}

// ended: the execution admits no new work and will not close its actions
// itself any more.
func ended(st actionflow.ExecutionStatus) bool {
	return st == actionflow.ExecCompleted || st == actionflow.ExecFailed || st == actionflow.ExecCancelled
}

// heldByRevision reports whether a's execution is paused by a revision
// block that holds a (its machine waits for Continue, not started).
func heldByRevision(ctx context.Context, flow *actionflow.Service, a actionflow.Action) (bool, error) {
	e, err := flow.GetExecution(ctx, a.ExecutionID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return e.Status == actionflow.ExecPaused && e.PauseOwner == actionflow.PauseByRevision &&
		e.RevisionBlock != nil && slices.Contains(e.RevisionBlock.Held, a.ActionID), nil
}
