package actionflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// ResendDecision completes an approval wait again from the stored human
// decision, for a decision that is durable but whose SendTask* was lost.
// It acts only on the action's current wait (a superseded wait's item is
// gone, so an answer to an earlier question can never resume, fail or
// cancel a newer one), only while the action is still asking and has no
// receipt. A wait that already ended is not an error. sent reports whether
// a completion was sent.
func (s *Service) ResendDecision(ctx context.Context, id ids.ActionID) (sent bool, err error) {
	a, err := s.getAction(ctx, id)
	if err != nil {
		return false, err
	}
	if a.States.Permission != lifecycle.PermissionAsk || a.Start != nil {
		return false, nil
	}
	if _, err := s.getReceipt(ctx, id); err == nil {
		return false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	ap, err := s.getApproval(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if s.cfg.Tasks == nil {
		return false, errors.New("actionflow: no TaskCompleter configured")
	}
	switch ap.Status {
	case ApprovalApproved:
		// The approval boundary selects the revision again (revisions.go).
		var sent bool
		sent, err = s.resumeApproved(ctx, a, ap)
		if !sent && err == nil {
			return false, nil
		}
	case ApprovalDeclinedSt:
		by := ""
		if ap.DecidedBy != nil {
			by = ap.DecidedBy.Subject
		}
		err = s.cfg.Tasks.SendTaskFailure(ctx, ap.TaskToken, ApprovalDeclined, "declined by "+by)
	case ApprovalCancelled:
		err = s.cfg.Tasks.SendTaskFailure(ctx, ap.TaskToken, ExecutionCancelled, "the execution was cancelled")
	default:
		return false, nil // pending: only a human answers; expired: the state machine already moved on
	}
	if errors.Is(err, ErrTaskGone) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("resend decision of %s: %w", ap.ApprovalID, err)
	}
	return true, nil
}

// ResendResult completes a host dispatch wait again from the result the
// owning attempt stored on the action (a lost SendTaskSuccess). It never
// runs anything.
func (s *Service) ResendResult(ctx context.Context, id ids.ActionID) (sent bool, err error) {
	a, err := s.getAction(ctx, id)
	if err != nil {
		return false, err
	}
	if a.Host == nil || a.Start == nil || a.Result == nil {
		return false, nil
	}
	if err := s.completeHostWait(ctx, a, *a.Result); err != nil {
		return false, fmt.Errorf("resend result of %s: %w", id, err)
	}
	return true, nil
}
