package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/store"
)

// cancelActions carries out a cancellation the owner applied (the
// execution is cancelling, so nothing new is admitted): every action of the
// execution that has not started is closed and its wait failed (a pending
// approval becomes cancelled); started actions finish and record their
// results. Then the execution becomes cancelled if nothing is left
// running. Idempotent: the sweeper runs it again for cancelling executions.
func (s *Service) cancelActions(ctx context.Context, o Owner, e actionflow.Execution) error {
	if err := s.closeUnstarted(ctx, e, "execution_cancelled"); err != nil {
		return err
	}
	_, err := s.FinishCancel(ctx, o)
	return err
}

// closeUnstarted closes every action of e that has not started, with
// reason, and fails its wait (a pending approval becomes cancelled);
// started actions finish and record their results. Idempotent.
func (s *Service) closeUnstarted(ctx context.Context, e actionflow.Execution, reason string) error {
	return s.flow.CloseUnstarted(ctx, e.ExecutionID, reason, "")
}

// FinishCancel moves a cancelling execution to cancelled once every one
// of its actions has a sealed receipt (the owner confirms shutdown after
// requesting it). It reports whether the execution is cancelled.
func (s *Service) FinishCancel(ctx context.Context, o Owner) (bool, error) {
	e, err := s.flow.GetExecution(ctx, o.ExecutionID)
	if err != nil {
		return false, err
	}
	switch e.Status {
	case actionflow.ExecCancelled:
		return true, nil
	case actionflow.ExecCancelling:
	default:
		return false, nil
	}
	after := ""
	for {
		page, next, err := s.flow.OpenActions(ctx, after, store.MaxLimit)
		if err != nil {
			return false, err
		}
		for _, a := range page {
			if a.ExecutionID != e.ExecutionID {
				continue
			}
			if _, err := s.flow.GetReceipt(ctx, a.ActionID); errors.Is(err, store.ErrNotFound) {
				return false, nil // still running or recording: wait for its receipt
			} else if err != nil {
				return false, err
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	if err := s.Renew(ctx, o); err != nil {
		return false, err
	}
	e.Status = actionflow.ExecCancelled
	e.Attempt = o.Attempt
	e.LastActivity = s.flow.Now()
	if err := s.flow.SaveExecution(ctx, &e, e.Version, o.Fence); err != nil {
		return false, fmt.Errorf("finish cancellation of %s: %w", e.ExecutionID, err)
	}
	if _, err := s.flow.AppendEvent(ctx, actionflow.Event{Type: "execution.cancelled", SessionID: e.SessionID, ExecutionID: e.ExecutionID},
		map[string]any{"execution_version": e.Version}); err != nil {
		s.log.Warn("cancellation event not appended", "execution_id", e.ExecutionID, "error", err)
	}
	return true, nil
}
