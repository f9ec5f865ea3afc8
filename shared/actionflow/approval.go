package actionflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// AwaitOutput is the approval function's response (ignored by the
// waitForTaskToken integration; useful in logs and tests).
type AwaitOutput struct {
	ApprovalID ids.ApprovalID `json:"approval_id"`
	Status     ApprovalStatus `json:"status"`
}

// ApprovalStep is the approval function: mode "await" stores the task token
// on a fresh pending approval; mode "expire" records an expired wait.
func (s *Service) ApprovalStep(ctx context.Context, in StepInput) (AwaitOutput, error) {
	var out AwaitOutput
	var err error
	switch in.Mode {
	case "", "await":
		out, err = s.awaitApproval(ctx, in)
	case "expire":
		out, err = s.expireApproval(ctx, in)
	default:
		err = &PermanentError{Code: "bad_mode", Msg: fmt.Sprintf("approval mode %q", in.Mode)}
	}
	return out, stepError("approval "+string(in.ActionID), err)
}

func (s *Service) awaitApproval(ctx context.Context, in StepInput) (AwaitOutput, error) {
	if in.TaskToken == "" {
		return AwaitOutput{}, &PermanentError{Code: "no_task_token", Msg: "await needs $$.Task.Token"}
	}
	a, err := s.getAction(ctx, in.ActionID)
	if err != nil {
		return AwaitOutput{}, err
	}
	if a.States.Permission != lifecycle.PermissionAsk || a.Decision == nil {
		return AwaitOutput{}, &PermanentError{Code: "not_asking", Msg: "permission is " + string(a.States.Permission)}
	}
	if a.Closed != nil {
		// Cancelled before its wait was stored: no wait is published, and the
		// state machine records not_started through its Catch.
		return AwaitOutput{}, &PermanentError{Code: "closed", Msg: "the action was closed (" + a.Closed.Reason + ")"}
	}
	prev, err := s.getApproval(ctx, a.ActionID)
	expected := int64(0)
	switch {
	case err == nil:
		if prev.TaskToken == in.TaskToken {
			return AwaitOutput{ApprovalID: prev.ApprovalID, Status: prev.Status}, nil // re-invoked: same wait
		}
		if prev.Status == ApprovalApproved && a.Handoff != nil && a.Handoff.ApprovalID == prev.ApprovalID {
			return s.awaitHandedOff(ctx, a, prev, in.TaskToken)
		}
		expected = prev.Version
	case !errors.Is(err, store.ErrNotFound):
		return AwaitOutput{}, err
	}
	now := s.now()
	ap := Approval{
		ApprovalID: ApprovalIDFor(a.ActionID), ActionID: a.ActionID, ExecutionID: a.ExecutionID, SessionID: a.SessionID,
		Tool: a.Tool, Arguments: a.Arguments, ArgsDigest: a.ArgsDigest, PolicyVersion: a.Decision.PolicyVersion,
		Reason: a.Decision.Reason, Fallback: a.Decision.Fallback, Risk: a.Decision.Risk, Status: ApprovalPending, TaskToken: in.TaskToken,
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.ApprovalTimeout), Version: expected + 1,
	}
	// One item holds the current wait: replacing it supersedes the earlier
	// wait, whose approval id then no longer resolves anything.
	if err := s.cfg.Store.CompareAndSwap(ctx, s.approvalItem(ap), expected, 0); err != nil {
		return AwaitOutput{}, fmt.Errorf("store approval wait: %w", err)
	}
	s.logFor(&a).Info("approval requested", "approval_id", ap.ApprovalID)
	if _, err := s.appendEvent(ctx, Event{Type: "approval.requested", SessionID: a.SessionID, ExecutionID: a.ExecutionID, ActionID: a.ActionID},
		s.ApprovalView(ap)); err != nil {
		return AwaitOutput{}, err
	}
	// A cancellation closes the action, then cancels the pending wait it
	// finds; this step stores the wait, then looks for the closure. Each
	// writes before it reads the other's item, so at least one of them sees
	// the other and no wait of a cancelled execution is left pending.
	if cur, err := s.getAction(ctx, a.ActionID); err == nil && cur.Closed != nil {
		if err := s.cancelWait(ctx, ap, cur.Closed.Reason); err != nil {
			return AwaitOutput{}, err
		}
		return AwaitOutput{ApprovalID: ap.ApprovalID, Status: ApprovalCancelled}, nil
	}
	return AwaitOutput{ApprovalID: ap.ApprovalID, Status: ap.Status}, nil
}

// awaitHandedOff is the approval step of a machine an approved action was
// handed off to (revisions.go): the decision was made already, so the
// approval keeps it, takes this machine's wait (the sweeper resends the
// decision there if this completion is lost) and completes it at once.
func (s *Service) awaitHandedOff(ctx context.Context, a Action, ap Approval, token string) (AwaitOutput, error) {
	if waitDigest(ap.TaskToken) == a.Handoff.FromWait {
		expected := ap.Version
		ap.TaskToken = token
		ap.Version++
		if err := s.cfg.Store.CompareAndSwap(ctx, s.approvalItem(ap), expected, 0); err != nil {
			return AwaitOutput{}, fmt.Errorf("move approval %s to machine %s: %w", ap.ApprovalID, a.MachineName(), err)
		}
	} else if ap.TaskToken != token {
		return AwaitOutput{}, &PermanentError{Code: "stale_wait", Msg: "the approval belongs to another machine's wait"}
	}
	if s.cfg.Tasks == nil {
		return AwaitOutput{}, errors.New("actionflow: no TaskCompleter configured")
	}
	err := s.cfg.Tasks.SendTaskSuccess(ctx, token, encode(AwaitOutput{ApprovalID: ap.ApprovalID, Status: ap.Status}))
	if err != nil && !errors.Is(err, ErrTaskGone) {
		return AwaitOutput{}, fmt.Errorf("complete the handed-off wait of %s: %w", ap.ApprovalID, err)
	}
	return AwaitOutput{ApprovalID: ap.ApprovalID, Status: ap.Status}, nil
}

func (s *Service) expireApproval(ctx context.Context, in StepInput) (AwaitOutput, error) {
	ap, err := s.getApproval(ctx, in.ActionID)
	if errors.Is(err, store.ErrNotFound) {
		return AwaitOutput{Status: ApprovalExpired}, nil
	}
	if err != nil {
		return AwaitOutput{}, err
	}
	// A wait that timed out is expired even if a decision raced it: the
	// decision never reached the state machine, so it never took effect.
	if ap.Status == ApprovalPending || ap.Status == ApprovalApproved {
		if _, err := s.setApprovalStatus(ctx, ap, ApprovalExpired, nil); err != nil {
			return AwaitOutput{}, err
		}
		ap.Status = ApprovalExpired
	}
	return AwaitOutput{ApprovalID: ap.ApprovalID, Status: ap.Status}, nil
}

func (s *Service) setApprovalStatus(ctx context.Context, ap Approval, st ApprovalStatus, by *Principal) (Approval, error) {
	expected := ap.Version
	ap.Status = st
	if by != nil {
		now := s.now()
		ap.DecidedBy, ap.DecidedAt = by, &now
	}
	ap.Version++
	// The decision and its event (who, from which origin: DecidedBy) are
	// one transaction: an entry of the session's decision log.
	if _, err := s.casWithEvent(ctx, s.approvalItem(ap), expected,
		Event{Type: "approval." + string(st), SessionID: ap.SessionID, ExecutionID: ap.ExecutionID, ActionID: ap.ActionID}, s.ApprovalView(ap)); err != nil {
		return ap, fmt.Errorf("set approval %s %s: %w", ap.ApprovalID, st, err)
	}
	return ap, nil
}

// Decision values of DecideApproval.
const (
	DecisionApprove = "approve"
	DecisionDecline = "decline"
)

// DecideApproval applies a human decision to a pending approval exactly
// once (conditional write pending -> approved|declined), then completes the
// Step Functions wait. Only an authenticated human (or admin) of the owning
// session may decide; the digest must be the action's exact args digest.
func (s *Service) DecideApproval(ctx context.Context, id ids.ApprovalID, decision, digest string, by Principal) (Approval, error) {
	if by.Role != "human" && by.Role != "admin" {
		return Approval{}, &ForbiddenError{Msg: "only a human owner may decide approvals"}
	}
	if decision != DecisionApprove && decision != DecisionDecline {
		return Approval{}, &ValidationError{Field: "decision", Msg: fmt.Sprintf("%q is not approve or decline", decision)}
	}
	actionID, ok := ActionOfApproval(id)
	if !ok {
		return Approval{}, &NotFoundError{What: "approval " + string(id)}
	}
	ap, err := s.getApproval(ctx, actionID)
	if errors.Is(err, store.ErrNotFound) {
		return Approval{}, &NotFoundError{What: "approval " + string(id)}
	}
	if err != nil {
		return Approval{}, err
	}
	if by.Role != "admin" && by.Session != ap.SessionID {
		return Approval{}, &NotFoundError{What: "approval " + string(id)} // another session's: not visible
	}
	if ap.ApprovalID != id {
		return Approval{}, &ConflictError{Code: "approval_superseded", Msg: "this wait was replaced by a newer one", Current: s.ApprovalView(ap)}
	}
	if digest != ap.ArgsDigest {
		return Approval{}, &ValidationError{Field: "digest", Msg: "does not match the action's arguments digest " + ap.ArgsDigest}
	}
	if ap.Status != ApprovalPending {
		return Approval{}, &ConflictError{Code: "already_decided", Msg: "the approval is already " + string(ap.Status), Current: s.ApprovalView(ap)}
	}
	st := ApprovalApproved
	if decision == DecisionDecline {
		st = ApprovalDeclinedSt
	}
	decided, err := s.setApprovalStatus(ctx, ap, st, &by)
	var vc *store.VersionConflictError
	if errors.As(err, &vc) {
		cur, gerr := s.getApproval(ctx, actionID)
		if gerr == nil {
			return Approval{}, &ConflictError{Code: "already_decided", Msg: "the approval is already " + string(cur.Status), Current: s.ApprovalView(cur)}
		}
		return Approval{}, err
	}
	if err != nil {
		return Approval{}, err
	}
	if s.cfg.Tasks == nil {
		return decided, errors.New("actionflow: no TaskCompleter configured")
	}
	if st == ApprovalApproved {
		// The approval boundary selects the revision again: the wait
		// completes on the machine's own revision, or the action is handed
		// off to the adopted one, or held by a revision block (revisions.go).
		var a Action
		if a, err = s.getAction(ctx, actionID); err == nil {
			_, err = s.resumeApproved(ctx, a, decided)
		}
	} else {
		err = s.cfg.Tasks.SendTaskFailure(ctx, ap.TaskToken, ApprovalDeclined, "declined by "+by.Subject)
	}
	if errors.Is(err, ErrTaskGone) && !errors.Is(err, ErrTaskTimedOut) {
		// The wait is no longer waiting but did not time out: the sweeper
		// resent this very decision (it is durable), or the execution was
		// stopped, whose recovery records the outcome. The decision stands.
		s.log.Info("approval wait already completed", "approval_id", id, "error", err)
		err = nil
	}
	if errors.Is(err, ErrTaskTimedOut) {
		expired, xerr := s.setApprovalStatus(ctx, decided, ApprovalExpired, nil)
		if xerr != nil {
			return decided, xerr
		}
		return Approval{}, &ConflictError{Code: "approval_expired", Msg: "the wait ended before the decision arrived", Current: s.ApprovalView(expired)}
	}
	if err != nil {
		// The decision is durable; the state machine did not hear it yet.
		// Recovery completes the wait from the stored decision.
		return decided, fmt.Errorf("complete approval wait %s: %w", id, err)
	}
	if s.cfg.Decider != nil {
		if a, gerr := s.getAction(ctx, actionID); gerr == nil {
			if cerr := s.cfg.Decider.ApprovalCompleted(ctx, a, decided); cerr != nil {
				s.logFor(&a).Warn("refusal counters not updated after approval", "error", cerr)
			}
		}
	}
	return decided, nil
}

// ApprovalView is an approval as clients see it (no task token).
func (s *Service) ApprovalView(ap Approval) Approval {
	ap.TaskToken = ""
	return ap
}

// GetApproval reads the current approval wait of an action.
func (s *Service) GetApproval(ctx context.Context, action ids.ActionID) (Approval, error) {
	ap, err := s.getApproval(ctx, action)
	if err != nil {
		return ap, err
	}
	return s.ApprovalView(ap), nil
}

// PendingApprovals lists a session's pending approvals.
func (s *Service) PendingApprovals(ctx context.Context, session ids.SessionID) ([]Approval, error) {
	var out []Approval
	after := ""
	for {
		page, err := s.cfg.Store.QueryIndex(ctx, store.IndexOpen, pendingApprovalsPK+string(session), store.QueryOptions{After: after, Limit: 200})
		if err != nil {
			return nil, fmt.Errorf("list pending approvals of %s: %w", session, err)
		}
		for _, it := range page.Items {
			ap, err := decode[Approval](it, "approval")
			if err != nil {
				return nil, err
			}
			if ap.Status == ApprovalPending { // the index is eventually consistent in DynamoDB
				out = append(out, s.ApprovalView(ap))
			}
		}
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}
