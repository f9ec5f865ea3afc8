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
// results. Then the execution's descendants are cancelled (each by a
// Cancel of its own, cancelDescendants), and the execution becomes
// cancelled if nothing of its own is left running. Idempotent: the sweeper
// runs it again for cancelling executions. r is the Cancel being applied
// (nil from the sweeper: the Cancel that made it cancelling is read).
func (s *Service) cancelActions(ctx context.Context, o Owner, e actionflow.Execution, r *Record) ([]Descendant, error) {
	if err := s.closeUnstarted(ctx, e, "execution_cancelled"); err != nil {
		return nil, err
	}
	root, err := s.cancelOf(ctx, e, r)
	if err != nil {
		return nil, err
	}
	reached, err := s.cancelDescendants(ctx, e, root, cascadeDepth(root))
	if err != nil {
		return reached, err
	}
	_, err = s.FinishCancel(ctx, o)
	return reached, err
}

// cancelOf is the Cancel that made e cancelling: r when it is being
// applied, else the command e names as its last (the cancellation's
// transition; every later control is refused without writing e), else
// (an execution cancelled before commands were named) a system Cancel
// with a fixed id.
func (s *Service) cancelOf(ctx context.Context, e actionflow.Execution, r *Record) (Record, error) {
	if r != nil {
		return *r, nil
	}
	if e.LastCommand != nil && e.LastCommand.Type == string(Cancel) {
		rec, err := s.getRecord(ctx, e.ExecutionID, e.LastCommand.ID)
		if err == nil {
			return rec, nil
		}
		if !errors.As(err, new(*actionflow.NotFoundError)) {
			return Record{}, err
		}
	}
	return Record{ExecutionID: e.ExecutionID, CommandID: "cancel", Type: Cancel, Principal: SystemPrincipal}, nil
}

func cascadeDepth(r Record) int {
	if r.Cascade != nil {
		return r.Cascade.Depth
	}
	return 0
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
