package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
)

// ReasonAbandoned is the End reason of an execution the idle timeout ended:
// its client left it running and went away.
const ReasonAbandoned = "abandoned"

// idlePrincipal sends the idle timeout's End commands.
var idlePrincipal = actionflow.Principal{Subject: "recovery:idle_timeout", Role: "system", Origin: "system"}

// Why an execution with an idle timeout is not idle (ExecutionReport.Did
// is "idle:<why>" only when the sweep did something; these are for tests
// and logs).
const (
	notIdleRecent     = "recent_activity"
	notIdleInFlight   = "action_open"
	notIdleUnresolved = "unresolved_effect"
	notIdleControl    = "control_pending"
	notIdleModel      = "model_request_open"
)

// abandonCommandID is the fixed identity of the idle end decided against
// execution version v: a repeated sweep (or a crash between saving and
// applying it) finds the saved command instead of writing another.
func abandonCommandID(version int64) ids.CommandID {
	return ids.CommandID(fmt.Sprintf("abandoned.v%d", version))
}

// IdleSince is when an execution's client last did something the service
// saw: the latest of its start, its own last activity (every command
// applied, every counted iteration, every restart decision, and what
// other components record as activity on the execution), any write of the
// execution item, and its checkpoint's last fold (every tool result
// recorded, every reconciliation).
func IdleSince(e actionflow.Execution, ck actionflow.Checkpoint) time.Time {
	at := e.CreatedAt
	for _, t := range []time.Time{e.LastActivity, e.UpdatedAt, ck.UpdatedAt} {
		if t.After(at) {
			at = t
		}
	}
	return at
}

// abandonIfIdle ends execution e failed with reason abandoned when it is
// idle (see the package doc, "Idle timeout"). open is e's open actions,
// read by this sweep. It reports what it did, or ok false when e is not a
// candidate or not idle (nothing written).
//
// The end is an End command (system principal, id abandoned.v<version>)
// against the version whose state was judged: the command service applies
// a Cancel saved before it first and then rejects it, and rejects it when
// anything moved the execution since (a newer activity), so the idle end
// never overrides a person's Cancel or a client that came back. Its
// application is End's: unstarted actions closed, pending approvals
// cancelled, started ones left to finish, and execution.ended appended.
func (s *Sweeper) abandonIfIdle(ctx context.Context, e actionflow.Execution, open []actionflow.Action) (ExecutionReport, bool) {
	rep := ExecutionReport{ExecutionID: e.ExecutionID, Did: "abandoned"}
	if why, _ := s.notIdle(ctx, e, open, false); why != "" {
		return rep, false // judged on the listed item alone, without a read
	}
	// The open index may lag (DynamoDB): judge the item as it is now.
	e, err := s.cfg.Flow.GetExecution(ctx, e.ExecutionID)
	if err != nil {
		rep.Did, rep.Error = "idle_check", err.Error()
		return rep, true
	}
	why, err := s.notIdle(ctx, e, open, true)
	if err != nil {
		rep.Did, rep.Error = "idle_check", err.Error()
		return rep, true
	}
	if why != "" {
		return rep, false
	}
	timeout := time.Duration(e.IdleTimeoutSeconds) * time.Second
	payload, _ := json.Marshal(control.EndPayload{Status: actionflow.ExecFailed, Reason: ReasonAbandoned,
		Message: fmt.Sprintf("no activity for %s (the session policy's idle timeout): the client that ran it is gone; ended by the recovery sweeper", timeout)})
	r, err := s.cfg.Control.Submit(ctx, e.ExecutionID, control.Command{ID: abandonCommandID(e.Version), Type: control.End,
		ExpectedVersion: e.Version, Payload: payload}, idlePrincipal)
	var stale *control.StaleVersionError
	var unsupported *control.UnsupportedError
	switch {
	case errors.As(err, &stale), errors.As(err, &unsupported):
		return rep, false // something moved it meanwhile: not idle after all
	case err != nil:
		rep.Did, rep.Error = "idle_end", err.Error()
	case r.Status == control.StatusAccepted:
		rep.Did = "abandon:accepted" // the lease holder, or the next sweep, applies it
	case r.Status == control.StatusRejected:
		rep.Did = "abandon:rejected: " + r.Reason
	default:
		s.log.Info("idle timeout: execution ended failed (abandoned)", "execution_id", e.ExecutionID, "session_id", e.SessionID,
			"idle_timeout", timeout, "execution_version", e.Version)
	}
	return rep, true
}

// notIdle says why e is not idle now ("" when it is). Only a running
// execution with an idle timeout can be idle; a pause (a person's, a
// fork's, or restart recovery's), a cancellation and an end are not the
// client's idleness. Neither is anything that waits on someone else: an
// open action (deciding, waiting for approval, dispatched, running,
// recording), an unknown outcome waiting for a person's reconciliation,
// or a control saved and not applied yet.
//
// Without full it judges only what the item says (a cheap first pass on
// the listed item: recent activity on the execution itself); with full
// (e as read now) it reads the checkpoint, unresolved effects and
// commands too.
func (s *Sweeper) notIdle(ctx context.Context, e actionflow.Execution, open []actionflow.Action, full bool) (string, error) {
	if e.Status != actionflow.ExecRunning || e.IdleTimeoutSeconds <= 0 {
		return "not_candidate", nil
	}
	if len(open) > 0 {
		return notIdleInFlight, nil
	}
	timeout := time.Duration(e.IdleTimeoutSeconds) * time.Second
	now := s.cfg.Flow.Now()
	if now.Sub(IdleSince(e, actionflow.Checkpoint{})) < timeout {
		return notIdleRecent, nil
	}
	if !full {
		return "", nil
	}
	ck, err := s.cfg.Flow.GetCheckpoint(ctx, e.ExecutionID)
	if err != nil {
		return "", err
	}
	if now.Sub(IdleSince(e, ck)) < timeout {
		return notIdleRecent, nil
	}
	if s.cfg.Run != nil {
		last, open, err := s.cfg.Run.RunActivity(ctx, e.ExecutionID)
		if err != nil {
			return "", err
		}
		if open {
			return notIdleModel, nil
		}
		if now.Sub(last) < timeout {
			return notIdleRecent, nil
		}
	}
	unresolved, err := s.cfg.Flow.UnresolvedActions(ctx, e.ExecutionID)
	if err != nil {
		return "", err
	}
	if len(unresolved) > 0 {
		return notIdleUnresolved, nil
	}
	cmds, err := s.cfg.Control.Commands(ctx, e.ExecutionID, idlePrincipal)
	if err != nil {
		return "", err
	}
	for _, c := range cmds {
		if c.Status == control.StatusAccepted {
			return notIdleControl, nil
		}
	}
	return "", nil
}
