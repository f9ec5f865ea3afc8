package recovery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// Restart decision outcomes (RestartIntent.Outcome).
const (
	Resumed = "resumed"
	Expired = "expired"
	Blocked = "blocked"
)

// What keeps an interrupted execution from continuing automatically.
const (
	BlockedIncompatible = "incompatible_revision"
	BlockedStale        = "stale_checkpoint"
	BlockedUnresolved   = "unresolved_effect"
	BlockedApproval     = "unanswered_approval"
)

// ExecutionReport is what a start-up, shutdown or sweep did to an execution.
type ExecutionReport struct {
	ExecutionID ids.ExecutionID `json:"execution_id"`
	// Did: "restart:resumed|expired|blocked", "shutdown", "commands",
	// "cancelled", "owned" (a live attempt holds it), "kept" (nothing
	// changed), "skipped" (not restart-owned); for the idle timeout
	// "abandoned" (ended failed, reason abandoned), "abandon:accepted"
	// (saved; the lease holder or the next sweep applies it),
	// "abandon:rejected: <reason>", and "idle_check"/"idle_end" with Error.
	Did   string `json:"did"`
	Error string `json:"error,omitempty"`
}

// Startup is the embedded stack's start-up recovery, run once by a new
// process (attempt) before it admits new work. It reads and writes the
// store only (the engine may not be serving yet): it claims each abandoned
// execution once (running, or paused by restart recovery; the execution
// lease is taken by this attempt) and applies the restart policy:
//
//   - the interruption's intent is kept when one exists for the same
//     checkpoint (a second interruption before new progress, or the
//     orderly shutdown's intent): restarting again never extends it;
//     otherwise a new intent is measured from the abandoned attempt's last
//     durable activity (execution activity or checkpoint), never from now;
//   - past the deadline (window 0: at once) the execution stays paused by
//     restart with outcome "expired": the checkpoint is kept for a manual
//     Continue and nothing is deleted;
//   - an incompatible revision, a stale checkpoint, an unresolved external
//     effect (unknown outcome, or an operation in flight at the
//     interruption) or an unanswered approval keeps it paused ("blocked");
//     a later sweep resumes it once that is resolved, within the deadline;
//   - otherwise it continues (running), outcome "resumed".
//
// User pauses, fork pauses, cancellations and ended executions are never
// continued. The decision is a system command with the fixed id
// "restart.<attempt>.v<execution version>" (restartCommandID), saved
// before it is applied; a decision that would
// change nothing is not written, so repeated start-ups are idempotent and
// none of this dispatches anything. Sweep (Run sweeps at once) repairs the
// actions once the engine serves.
func (s *Sweeper) Startup(ctx context.Context, attempt ids.AttemptID) ([]ExecutionReport, error) {
	s.attempt.Store(attempt)
	var out []ExecutionReport
	var first error
	open, err := s.openActionsByExecution(ctx)
	if err != nil {
		return nil, err
	}
	err = s.eachOpenExecution(ctx, func(e actionflow.Execution) {
		er := s.restartOne(ctx, attempt, e.ExecutionID, false, open[e.ExecutionID])
		if er.Error != "" && first == nil {
			first = errors.New(er.Error)
		}
		if er.Did != "skipped" {
			out = append(out, er)
		}
	})
	if err != nil {
		return out, err
	}
	return out, first
}

// Shutdown is the orderly stop, run after the process stopped dispatching
// and before it exits: every running execution gets a cooperative pause
// owned by restart recovery with its restart intent (measured from now, or
// the existing intent when nothing progressed since it was made). A racing
// execution write is retried at most three times within this attempt; an
// execution this attempt cannot pause is left running, and the next
// start-up treats it as abandoned.
func (s *Sweeper) Shutdown(ctx context.Context, attempt ids.AttemptID) ([]ExecutionReport, error) {
	var out []ExecutionReport
	var first error
	err := s.eachOpenExecution(ctx, func(e actionflow.Execution) {
		if e.Status != actionflow.ExecRunning {
			return
		}
		er := s.shutdownOne(ctx, attempt, e.ExecutionID)
		if er.Error != "" && first == nil {
			first = errors.New(er.Error)
		}
		out = append(out, er)
	})
	if err != nil {
		return out, err
	}
	return out, first
}

func (s *Sweeper) eachOpenExecution(ctx context.Context, fn func(e actionflow.Execution)) error {
	after := ""
	for {
		page, next, err := s.cfg.Flow.OpenExecutions(ctx, after, store.MaxLimit)
		if err != nil {
			return err
		}
		for _, e := range page {
			fn(e)
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// maxRaces bounds the retries of a decision that lost a race with another
// execution write, within one attempt.
const maxRaces = 3

func (s *Sweeper) shutdownOne(ctx context.Context, attempt ids.AttemptID, exec ids.ExecutionID) ExecutionReport {
	rep := ExecutionReport{ExecutionID: exec, Did: "shutdown"}
	ctl := s.cfg.Control
	o, err := ctl.Acquire(ctx, exec, attempt)
	if errors.Is(err, control.ErrOwned) {
		rep.Did = "owned"
		return rep
	}
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	defer ctl.Release(context.WithoutCancel(ctx), o)
	for race := 0; ; race++ {
		e, ck, err := s.state(ctx, exec)
		if err != nil {
			rep.Error = err.Error()
			return rep
		}
		if e.Status != actionflow.ExecRunning {
			rep.Did = "skipped"
			return rep
		}
		w, err := s.windowOf(ctx, e.SessionID)
		if err != nil {
			rep.Error = err.Error()
			return rep
		}
		intent := actionflow.RestartIntent{Reason: "shutdown", At: s.cfg.Flow.Now(), Window: w.String(),
			CheckpointVersion: ck.Version, Attempt: attempt}
		intent.Deadline = w.Deadline(intent.At)
		if e.Restart != nil && e.Restart.CheckpointVersion == ck.Version {
			intent = keep(*e.Restart) // no progress since: the deadline is not extended
			intent.Attempt = attempt
		}
		intent.Outcome, intent.Blocked = "", ""
		r, err := ctl.SubmitOwned(ctx, o, ids.CommandID("shutdown."+string(attempt)), control.Shutdown, e.Version, intent)
		var stale *control.StaleVersionError
		if errors.As(err, &stale) && race < maxRaces {
			continue
		}
		if err != nil {
			rep.Error = err.Error()
		} else if r.Status == control.StatusRejected {
			rep.Did = "skipped: " + r.Reason
		}
		return rep
	}
}

func keep(i actionflow.RestartIntent) actionflow.RestartIntent { return i }

func (s *Sweeper) state(ctx context.Context, exec ids.ExecutionID) (actionflow.Execution, actionflow.Checkpoint, error) {
	e, err := s.cfg.Flow.GetExecution(ctx, exec)
	if err != nil {
		return e, actionflow.Checkpoint{}, err
	}
	ck, err := s.cfg.Flow.GetCheckpoint(ctx, exec)
	return e, ck, err
}

// restartOwned: only an execution that was running, or is paused by
// restart recovery (and not already expired), is restart recovery's to
// decide.
func restartOwned(e actionflow.Execution) bool {
	if e.Status == actionflow.ExecRunning {
		return true
	}
	return e.Status == actionflow.ExecPaused && e.PauseOwner == actionflow.PauseByRestart &&
		!(e.Restart != nil && e.Restart.Outcome == Expired)
}

// restartCommandID is the fixed identity of a restart decision: the
// deciding attempt and the execution version it is made against. A
// decision repeated at the same version (a second start-up pass, a sweep
// after start-up, a retry after a crash between save and apply) finds the
// saved one instead of writing another; a later decision of the same
// attempt (a sweep continuing what start-up blocked) is a new command.
func restartCommandID(attempt ids.AttemptID, version int64) ids.CommandID {
	return ids.CommandID(fmt.Sprintf("restart.%s.v%d", attempt, version))
}

// restartOne decides one execution. pausedOnly limits it to executions
// restart recovery paused (the sweeper's re-evaluation never touches a
// running one). open is the execution's open actions, read once per pass
// for every execution.
func (s *Sweeper) restartOne(ctx context.Context, attempt ids.AttemptID, exec ids.ExecutionID, pausedOnly bool, open []actionflow.Action) ExecutionReport {
	rep := ExecutionReport{ExecutionID: exec, Did: "skipped"}
	e, ck, err := s.state(ctx, exec)
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	if !restartOwned(e) || (pausedOnly && e.Status != actionflow.ExecPaused) {
		return rep
	}
	if _, changed, err := s.decide(ctx, e, ck, open); err != nil || !changed {
		rep.Did = "kept"
		if err != nil {
			rep.Error = err.Error()
		}
		return rep
	}
	ctl := s.cfg.Control
	o, err := ctl.Acquire(ctx, exec, attempt)
	if errors.Is(err, control.ErrOwned) {
		rep.Did = "owned"
		return rep
	}
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	defer ctl.Release(context.WithoutCancel(ctx), o)
	for race := 0; ; race++ {
		if e, ck, err = s.state(ctx, exec); err != nil {
			rep.Error = err.Error()
			return rep
		}
		if !restartOwned(e) || (pausedOnly && e.Status != actionflow.ExecPaused) {
			return rep
		}
		intent, changed, err := s.decide(ctx, e, ck, open)
		if err != nil {
			rep.Error = err.Error()
			return rep
		}
		if !changed {
			rep.Did = "kept"
			return rep
		}
		r, err := ctl.SubmitOwned(ctx, o, restartCommandID(attempt, e.Version), control.Restart, e.Version, intent)
		var stale *control.StaleVersionError
		if errors.As(err, &stale) && race < maxRaces {
			continue
		}
		switch {
		case err != nil:
			rep.Error = err.Error()
		case r.Status == control.StatusRejected:
			rep.Did = "skipped: " + r.Reason
		default:
			rep.Did = "restart:" + intent.Outcome
			s.log.Info("restart decision", "execution_id", exec, "attempt_id", attempt, "outcome", intent.Outcome,
				"blocked", intent.Blocked, "deadline", intent.Deadline, "measured_from", intent.At)
		}
		return rep
	}
}

// decide computes the restart decision for e and whether it differs from
// the one it already has.
func (s *Sweeper) decide(ctx context.Context, e actionflow.Execution, ck actionflow.Checkpoint, open []actionflow.Action) (actionflow.RestartIntent, bool, error) {
	var intent actionflow.RestartIntent
	if e.Restart != nil && (e.Restart.Outcome == "" || e.Restart.Outcome == Blocked || e.Restart.CheckpointVersion == ck.Version) {
		// The same interruption (undecided, still blocked, or no progress
		// since it was decided): its deadline stands. A blocked execution's
		// checkpoint may move while its in-flight actions are recorded;
		// that is not new progress of a resumed owner.
		intent = *e.Restart
	} else {
		w, err := s.windowOf(ctx, e.SessionID)
		if err != nil {
			return intent, false, err
		}
		at := lastActivity(e, ck)
		intent = actionflow.RestartIntent{Reason: "abandoned", At: at, Window: w.String(), Deadline: w.Deadline(at),
			CheckpointVersion: ck.Version, Attempt: e.Attempt}
	}
	blocker, err := s.blocker(ctx, e, ck, intent, open)
	if err != nil {
		return intent, false, err
	}
	switch {
	case intent.Deadline != nil && !s.cfg.Flow.Now().Before(*intent.Deadline):
		intent.Outcome, intent.Blocked = Expired, ""
	case blocker != "":
		intent.Outcome, intent.Blocked = Blocked, blocker
	default:
		intent.Outcome, intent.Blocked = Resumed, ""
	}
	changed := e.Restart == nil || !sameIntent(*e.Restart, intent) ||
		(intent.Outcome == Resumed) != (e.Status == actionflow.ExecRunning)
	return intent, changed, nil
}

func sameIntent(a, b actionflow.RestartIntent) bool {
	sameDeadline := (a.Deadline == nil) == (b.Deadline == nil) && (a.Deadline == nil || a.Deadline.Equal(*b.Deadline))
	return sameDeadline && a.At.Equal(b.At) && a.Outcome == b.Outcome && a.Blocked == b.Blocked &&
		a.CheckpointVersion == b.CheckpointVersion && a.Reason == b.Reason
}

// lastActivity is the abandoned attempt's last durable activity: the later
// of the execution's own activity and its checkpoint's last fold.
func lastActivity(e actionflow.Execution, ck actionflow.Checkpoint) time.Time {
	at := e.LastActivity
	if at.IsZero() {
		at = e.CreatedAt
	}
	if ck.UpdatedAt.After(at) {
		at = ck.UpdatedAt
	}
	return at
}

// blocker names what keeps e explicit, or "". open is e's open actions.
func (s *Sweeper) blocker(ctx context.Context, e actionflow.Execution, ck actionflow.Checkpoint, intent actionflow.RestartIntent, open []actionflow.Action) (string, error) {
	if s.cfg.Revision != "" && e.ActiveRevision != "" && e.ActiveRevision != s.cfg.Revision &&
		(s.cfg.Compatible == nil || !s.cfg.Compatible(e.ActiveRevision)) {
		return BlockedIncompatible, nil
	}
	if intent.CheckpointVersion > ck.Version {
		return BlockedStale, nil // the checkpoint it inherited is not there
	}
	unresolved, err := s.cfg.Flow.UnresolvedActions(ctx, e.ExecutionID)
	if err != nil {
		return "", err
	}
	if len(unresolved) > 0 {
		return BlockedUnresolved, nil
	}
	found := ""
	for _, a := range open {
		if _, err := s.cfg.Flow.GetReceipt(ctx, a.ActionID); err == nil {
			continue // its result is known; only delivery is pending
		} else if !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		if a.Start != nil {
			return BlockedUnresolved, nil // in flight at the interruption: not known until recorded
		}
		ap, err := s.cfg.Flow.GetApproval(ctx, a.ActionID)
		if err == nil && ap.Status == actionflow.ApprovalPending {
			found = BlockedApproval
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("approval of %s: %w", a.ActionID, err)
		}
	}
	return found, nil
}

// openActionsByExecution reads the open actions once, by execution.
func (s *Sweeper) openActionsByExecution(ctx context.Context) (map[ids.ExecutionID][]actionflow.Action, error) {
	out := map[ids.ExecutionID][]actionflow.Action{}
	after := ""
	for {
		page, next, err := s.cfg.Flow.OpenActions(ctx, after, store.MaxLimit)
		if err != nil {
			return nil, err
		}
		for _, a := range page {
			out[a.ExecutionID] = append(out[a.ExecutionID], a)
		}
		if next == "" {
			return out, nil
		}
		after = next
	}
}
