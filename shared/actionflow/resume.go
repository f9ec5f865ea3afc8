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
		err = s.cfg.Tasks.SendTaskSuccess(ctx, ap.TaskToken, encode(AwaitOutput{ApprovalID: ap.ApprovalID, Status: ap.Status}))
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

// SavedPointError: a Fork or Retry named a saved point the execution does
// not have. Only the current checkpoint (and the start, version 0) is kept,
// so those are the allowed saved points.
type SavedPointError struct {
	ExecutionID ids.ExecutionID
	Requested   int64
	Current     int64
}

func (e *SavedPointError) Error() string {
	return fmt.Sprintf("execution %s has no saved point %d (allowed: 0 or the current checkpoint %d)", e.ExecutionID, e.Requested, e.Current)
}

// ForkCheckpoint gives a new execution the checkpoint of an allowed saved
// point of another one: version 0 (the start, an empty checkpoint) or the
// source's current checkpoint version. The source's checkpoint is only
// read; its history stays. Repeating it for the same child is idempotent.
func (s *Service) ForkCheckpoint(ctx context.Context, from ids.ExecutionID, version int64, to ids.ExecutionID) (Checkpoint, error) {
	src, err := s.GetCheckpoint(ctx, from)
	if err != nil {
		return Checkpoint{}, err
	}
	if version != 0 && version != src.Version {
		return Checkpoint{}, &SavedPointError{ExecutionID: from, Requested: version, Current: src.Version}
	}
	ck := Checkpoint{ExecutionID: to, UpdatedAt: s.now(), Version: 1}
	if version != 0 {
		ck.Recorded, ck.LastActionID, ck.RecentFailures = src.Recorded, src.LastActionID, src.RecentFailures
		// Folded is not copied: it names the source's actions, not the child's.
	}
	k := checkpointKey(to)
	err = s.cfg.Store.CompareAndSwap(ctx, store.Item{PK: k.PK, SK: k.SK, Version: 1, Body: encode(ck)}, 0, 0)
	var vc *store.VersionConflictError
	if errors.As(err, &vc) {
		return s.GetCheckpoint(ctx, to) // written by an earlier run of the same fork
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("fork checkpoint %s@%d -> %s: %w", from, version, to, err)
	}
	return ck, nil
}
