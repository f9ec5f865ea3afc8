package actionflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// CancelAction stops an action of a cancelled execution from ever being
// dispatched. It closes the action (compare-and-swap, so a racing dispatch
// claim either wrote its start evidence first or loses), then fails the
// wait the action's state machine is parked on, if any: a pending approval
// becomes cancelled, a pending question cancelled (or expired, when the
// execution ended), a published host task is withdrawn. The state machine
// then records not_started through its Catch (error ExecutionCancelled).
//
// An action that already started is left alone and started == true: it
// finishes and its result is recorded, because cancellation cannot undo an
// operation that began, and stopping its state machine would turn a result
// about to be known into unknown. This is why cancellation never calls
// StopExecution.
func (s *Service) CancelAction(ctx context.Context, id ids.ActionID, reason string) (started bool, err error) {
	a, err := s.updateAction(ctx, id, 0, func(a *Action) error {
		if a.Start != nil || a.Closed != nil {
			return errStop
		}
		a.Closed = &Closure{Reason: reason, At: s.now()}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("cancel action %s: %w", id, err)
	}
	if a.Start != nil {
		return true, nil
	}
	if a.Host != nil {
		if err := s.failTask(ctx, a.Host.TaskToken, reason); err != nil {
			return false, fmt.Errorf("withdraw host task %s: %w", id, err)
		}
	}
	if q, err := s.getQuestion(ctx, id); err == nil && q.Status == QuestionPending {
		if err := s.settleQuestion(ctx, q, reason); err != nil {
			return false, fmt.Errorf("settle question %s: %w", q.QuestionID, err)
		}
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	ap, err := s.getApproval(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return false, err
	case ap.Status == ApprovalPending:
		if err := s.cancelWait(ctx, ap, reason); err != nil {
			return false, err
		}
	}
	return false, nil
}

// cancelWait marks a pending approval cancelled (exactly once) and fails
// its task-token wait.
func (s *Service) cancelWait(ctx context.Context, ap Approval, reason string) error {
	if ap.Status == ApprovalPending {
		_, err := s.setApprovalStatus(ctx, ap, ApprovalCancelled, nil)
		var vc *store.VersionConflictError
		if errors.As(err, &vc) {
			cur, gerr := s.getApproval(ctx, ap.ActionID)
			if gerr != nil {
				return gerr
			}
			if cur.ApprovalID != ap.ApprovalID || cur.Status == ApprovalPending {
				return err // a newer wait, or still pending: not ours to settle
			}
			if cur.Status != ApprovalCancelled {
				// A human decided first; that decision completes the wait, and
				// revalidation refuses to dispatch in a cancelled execution.
				return nil
			}
		} else if err != nil {
			return err
		}
	}
	return s.failTask(ctx, ap.TaskToken, reason)
}

func (s *Service) failTask(ctx context.Context, token, reason string) error {
	if s.cfg.Tasks == nil {
		return errors.New("actionflow: no TaskCompleter configured")
	}
	err := s.cfg.Tasks.SendTaskFailure(ctx, token, ExecutionCancelled, reason)
	if errors.Is(err, ErrTaskGone) {
		return nil // the wait already ended; the state machine records from durable state
	}
	return err
}
