package control

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// transition decides what command r does to execution e now: the next
// execution state (nil for Fork/Retry, which write a child instead), or a
// rejection reason.
//
// The state may have changed since the command was accepted, so it is
// checked again: a control the execution no longer supports is rejected
// with the reason (after a cancellation: "cancellation takes precedence").
// Pause, Continue, Step, Steer and End act on what their sender saw, so they are
// also rejected when the execution moved past their expected version;
// Cancel is not (it takes precedence), and Fork/Retry do not change the
// source.
func (s *Service) transition(ctx context.Context, o Owner, e actionflow.Execution, r Record) (*actionflow.Execution, ids.ExecutionID, string, error) {
	if r.Type.system() {
		next, reason := systemTransition(e, r)
		return next, "", reason, nil
	}
	if r.Type == Cancel && cancelInEffect(e) {
		return nil, "", "", nil // already applied: cancellation takes precedence, not a refusal
	}
	if r.Type == Fork || r.Type == Retry {
		// An earlier run of this command made its child (and stopped before
		// completing the record): it stands whatever the source became
		// since; a Cancel of the source has reached it.
		if child, ok, err := s.madeChild(ctx, e, r); err != nil || ok {
			return nil, child, "", err
		}
	}
	if err := Check(e, r.Type); err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) {
			return nil, "", "unsupported: " + ue.Reason, nil
		}
		return nil, "", "", err
	}
	switch r.Type {
	case Pause, Continue, Step, Steer, End, SetRevisionPolicy:
		if e.Version != r.ExpectedVersion {
			return nil, "", fmt.Sprintf("stale_version: expected %d, the execution is at %d", r.ExpectedVersion, e.Version), nil
		}
	case Fork, Retry:
		if reason := sentBeforeCancel(e, r); reason != "" {
			return nil, "", reason, nil
		}
	}
	now := s.flow.Now()
	next := e
	next.LastActivity = now
	switch r.Type {
	case Pause:
		next.Status, next.PauseOwner, next.PauseReason, next.StepBudget = actionflow.ExecPaused, actionflow.PauseByUser, "pause", 0
	case Continue:
		// An explicit continuation ends any restart intent: the next
		// interruption is measured from this (durable) activity. It also
		// lifts a revision block: the held actions select their revision
		// again (finish starts them), under the policy it may set.
		next.Status, next.PauseOwner, next.PauseReason, next.StepBudget, next.Restart = actionflow.ExecRunning, "", "", 0, nil
		next.RevisionBlock = nil
		if p := decodeAs[ContinuePayload](r.Payload); p.RevisionPolicy != "" {
			next.RevisionPolicy = p.RevisionPolicy
		}
	case SetRevisionPolicy:
		next.RevisionPolicy = decodeAs[RevisionPolicyPayload](r.Payload).Policy
	case Step:
		p := decodeAs[StepPayload](r.Payload)
		if p.Steps == 0 {
			p.Steps = 1
		}
		next.Status, next.PauseOwner, next.PauseReason, next.StepBudget, next.Restart = actionflow.ExecRunning, "", "", p.Steps, nil
		next.RevisionBlock = nil
	case Steer:
		p := decodeAs[SteerPayload](r.Payload)
		if len(e.Steering) >= MaxSteeringEntries {
			return nil, "", fmt.Sprintf("steering_full: %d instructions are waiting; continue the execution so they are used", len(e.Steering)), nil
		}
		next.Steering = append(append([]string(nil), e.Steering...), p.Instructions)
	case Cancel:
		next.Status, next.StepBudget = actionflow.ExecCancelling, 0
	case End:
		p := decodeAs[EndPayload](r.Payload)
		next.Status, next.PauseOwner, next.PauseReason, next.StepBudget, next.Restart = p.Status, "", "", 0, nil
		next.End = &actionflow.EndInfo{Status: p.Status, Reason: p.Reason, Message: p.Message, By: r.Principal.Role, At: now}
	case Fork, Retry:
		child, reason, err := s.fork(ctx, e, r)
		return nil, child, reason, err
	default:
		return nil, "", "", fmt.Errorf("no transition for %q", r.Type)
	}
	return &next, "", "", nil
}

// sentBeforeCancel refuses a Fork or Retry sent before a cancellation
// and applied after it: it would start work the cancellation was meant to
// end, and cancellation takes precedence. One sent after it (made against
// the cancelled version) is new, deliberate work.
func sentBeforeCancel(e actionflow.Execution, r Record) string {
	if cancelInEffect(e) && e.LastCommand != nil && e.LastCommand.Type == string(Cancel) && r.ExpectedVersion < e.LastCommand.Version {
		return fmt.Sprintf("cancellation takes precedence: the %s was sent at version %d, before the execution was cancelled (command %s, version %d)",
			r.Type, r.ExpectedVersion, e.LastCommand.ID, e.LastCommand.Version)
	}
	return ""
}

// madeChild finds the child an earlier run of Fork/Retry r made.
func (s *Service) madeChild(ctx context.Context, e actionflow.Execution, r Record) (ids.ExecutionID, bool, error) {
	id := ChildID(e.ExecutionID, r.CommandID)
	got, err := s.flow.GetExecution(ctx, id)
	if errors.As(err, new(*actionflow.NotFoundError)) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if got.ParentID != e.ExecutionID {
		return "", false, fmt.Errorf("child %s exists and was not made by command %s", id, r.CommandID)
	}
	return id, true, nil
}

// ChildID is the execution id of the Fork/Retry made by command id from
// source: derived, so applying the command again finds the same child.
func ChildID(source ids.ExecutionID, id ids.CommandID) ids.ExecutionID {
	sum := sha256.Sum256([]byte(string(source) + "\x00" + string(id)))
	return ids.ExecutionID("exe_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16])))
}

// fork creates the independent child execution of a Fork or Retry from an
// allowed saved point (any checkpoint version the source wrote, or 0, the
// start), keeping the source and its history untouched. The child keeps
// the source's session, run, revision and iteration limit; a Fork starts
// a new branch, a Retry stays on the source's branch. Agent chat children
// start paused and need Continue; other kinds follow their scheduler
// (running).
//
// The child is created in one transaction with a Check of the source's
// version as read here: when the source moved meanwhile (an admission, or
// a Cancel applied by another owner after a lease takeover) the command
// is decided again against the new state, so no child appears beside a
// cancelling source (cancellation takes precedence; a Cancel reaches
// every child created before it).
func (s *Service) fork(ctx context.Context, e actionflow.Execution, r Record) (ids.ExecutionID, string, error) {
	p := decodeAs[ForkPayload](r.Payload)
	childID := ChildID(e.ExecutionID, r.CommandID)
	for i := 0; ; i++ {
		if i > 0 {
			var err error
			if e, err = s.flow.GetExecution(ctx, e.ExecutionID); err != nil {
				return "", "", err
			}
			if child, ok, err := s.madeChild(ctx, e, r); err != nil || ok {
				return child, "", err
			}
			if err := Check(e, r.Type); err != nil {
				var ue *UnsupportedError
				if errors.As(err, &ue) {
					return "", "unsupported: " + ue.Reason, nil
				}
				return "", "", err
			}
			if reason := sentBeforeCancel(e, r); reason != "" {
				return "", reason, nil
			}
		}
		var point int64
		switch {
		case p.CheckpointVersion != nil:
			point = *p.CheckpointVersion
		case r.Type == Fork:
			ck, err := s.flow.GetCheckpoint(ctx, e.ExecutionID)
			if err != nil {
				return "", "", err
			}
			point = ck.Version
		}
		ck, err := s.flow.SavedPointState(ctx, e.ExecutionID, point)
		if err != nil {
			var spe *actionflow.SavedPointError
			if errors.As(err, &spe) {
				return "", "saved_point_unavailable: " + spe.Error(), nil
			}
			return "", "", err
		}
		now := s.flow.Now()
		child := actionflow.Execution{ExecutionID: childID, SessionID: e.SessionID, RunID: e.RunID, ParentID: e.ExecutionID,
			BranchID: string(childID), StartedRevision: e.ActiveRevision, ActiveRevision: e.ActiveRevision, RevisionPolicy: e.RevisionPolicy, Kind: e.Kind, Status: actionflow.ExecRunning,
			IterationLimit: e.IterationLimit, IterationLimitSource: e.IterationLimitSource,
			IdleTimeoutSeconds: e.IdleTimeoutSeconds, ForkPoint: &point,
			LastCommand: &actionflow.CommandRef{ID: r.CommandID, Type: string(r.Type), Version: 1},
			CreatedAt:   now, LastActivity: now}
		if r.Type == Retry {
			child.BranchID = e.BranchID
		}
		if child.Kind == "agent_chat" {
			child.Status, child.PauseOwner, child.PauseReason = actionflow.ExecPaused, actionflow.PauseByFork, string(r.Type)+": continue to start"
		}
		created, err := s.flow.CreateChild(ctx, e, &child, &ck)
		var pm *actionflow.ParentMovedError
		if errors.As(err, &pm) && i < maxCancelRaces {
			continue
		}
		if err != nil {
			return "", "", err
		}
		if created {
			s.event(ctx, child, "execution.created", r)
		}
		return childID, "", nil
	}
}
