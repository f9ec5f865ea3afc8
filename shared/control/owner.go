package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// Owner is an attempt that holds an execution's lease (EXEC#<id>/LEASE).
// Only an owner applies commands and publishes the execution's state, and
// every one of its execution writes carries Fence, so once another attempt
// takes the lease over, this one's late writes are rejected by the store
// (*store.FenceError).
type Owner struct {
	ExecutionID ids.ExecutionID
	Attempt     ids.AttemptID
	Fence       int64
}

// ErrOwned: another attempt holds the execution's lease.
var ErrOwned = errors.New("another attempt owns the execution")

// Acquire takes the execution's lease for attempt (an activation). It
// fails with an error matching ErrOwned (and store.ErrConflict) while
// another attempt's lease is live.
func (s *Service) Acquire(ctx context.Context, exec ids.ExecutionID, attempt ids.AttemptID) (Owner, error) {
	l, err := s.st.AcquireLease(ctx, store.LeaseRequest{Resource: store.ExecPK(string(exec)), AttemptID: string(attempt), TTL: s.ttl, Now: s.flow.Now()})
	if err != nil {
		var held *store.LeaseHeldError
		if errors.As(err, &held) {
			return Owner{}, fmt.Errorf("%w: %w", ErrOwned, err)
		}
		return Owner{}, fmt.Errorf("acquire execution %s: %w", exec, err)
	}
	return Owner{ExecutionID: exec, Attempt: attempt, Fence: l.Fence}, nil
}

// Renew confirms o still owns the execution and extends its lease. An
// owner renews before it publishes, so an attempt that stalled past its
// lease learns it lost ownership (a *store.LeaseLostError, matching
// store.ErrConflict) instead of writing; the fence on every write covers
// the rest of the window.
func (s *Service) Renew(ctx context.Context, o Owner) error {
	_, err := s.st.RenewLease(ctx, store.Lease{Resource: store.ExecPK(string(o.ExecutionID)), AttemptID: string(o.Attempt), Fence: o.Fence}, s.ttl, s.flow.Now())
	if err != nil {
		return fmt.Errorf("attempt %s owning %s: %w", o.Attempt, o.ExecutionID, err)
	}
	return nil
}

// Release gives the lease up. Losing it meanwhile is not an error here:
// everything this owner wrote was fenced.
func (s *Service) Release(ctx context.Context, o Owner) {
	err := s.st.ReleaseLease(ctx, store.Lease{Resource: store.ExecPK(string(o.ExecutionID)), AttemptID: string(o.Attempt), Fence: o.Fence})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		s.log.Warn("execution lease not released; it lapses", "execution_id", o.ExecutionID, "attempt_id", o.Attempt, "error", err)
	}
}

// ApplyPending takes the execution's lease as a fresh attempt, applies its
// accepted commands and releases the lease. When another attempt owns the
// execution it returns (nil, nil): the owner applies them.
//
// After releasing, it looks once more for accepted commands and, if there
// are any, goes round again: a sender that saved a command while this
// attempt held the lease found the lease taken and left the command to
// the owner, and the owner may have listed the pending commands before
// that save.
func (s *Service) ApplyPending(ctx context.Context, exec ids.ExecutionID) ([]Record, error) {
	var done []Record
	for round := 0; ; round++ {
		o, err := s.Acquire(ctx, exec, ids.NewAttemptID())
		if errors.Is(err, ErrOwned) {
			return done, nil
		}
		if err != nil {
			return done, err
		}
		got, err := s.ApplyOwned(ctx, o)
		s.Release(context.WithoutCancel(ctx), o)
		done = append(done, got...)
		if err != nil {
			return done, err
		}
		left, err := s.pending(ctx, exec)
		if err != nil || len(left) == 0 || round >= maxApplyRounds {
			return done, err
		}
	}
}

// maxApplyRounds bounds ApplyPending's rounds under a stream of commands.
const maxApplyRounds = 8

// ApplyOwned applies the execution's accepted commands as owner o:
// cancellations first, then in acceptance order.
func (s *Service) ApplyOwned(ctx context.Context, o Owner) ([]Record, error) {
	if err := s.Renew(ctx, o); err != nil {
		return nil, err
	}
	recs, err := s.pending(ctx, o.ExecutionID)
	if err != nil {
		return nil, err
	}
	var done []Record
	for _, r := range recs {
		got, err := s.apply(ctx, o, r)
		if err != nil {
			return done, fmt.Errorf("apply command %s: %w", r.CommandID, err)
		}
		done = append(done, got)
	}
	return done, nil
}

// apply applies one accepted command as owner o. The transition is one
// fenced compare-and-swap of the execution that also names the command
// (LastCommand), then the command's idempotent effects run, then the
// record is completed. A crash anywhere in between is finished by the next
// apply: it recognises its own transition by LastCommand.
func (s *Service) apply(ctx context.Context, o Owner, r Record) (Record, error) {
	for i := 0; ; i++ {
		e, err := s.flow.GetExecution(ctx, o.ExecutionID)
		if err != nil {
			return r, err
		}
		if e.LastCommand != nil && e.LastCommand.ID == r.CommandID {
			return s.finish(ctx, o, e, r, e.LastCommand.Version)
		}
		next, child, reason, err := s.transition(ctx, o, e, r)
		if err != nil {
			return r, err
		}
		if reason != "" {
			return s.complete(ctx, e, r, StatusRejected, reason, 0, "")
		}
		if next == nil && r.Type == Cancel {
			// Already cancelling or cancelled: applied at the version it
			// found, and the cancellation's effects are carried on.
			return s.finish(ctx, o, e, r, e.Version)
		}
		if next == nil { // Fork/Retry: the source is not written
			return s.complete(ctx, e, r, StatusApplied, "", e.Version, child)
		}
		next.LastCommand = &actionflow.CommandRef{ID: r.CommandID, Type: string(r.Type), Version: e.Version + 1}
		next.Attempt = o.Attempt
		if err := s.Renew(ctx, o); err != nil {
			return r, err
		}
		err = s.flow.SaveExecution(ctx, next, e.Version, o.Fence)
		var vc *store.VersionConflictError
		if errors.As(err, &vc) {
			// Lost a race for the execution. If it was to this very command
			// (another applier got there first), completion is idempotent;
			// anything else is decided again against the new state, which
			// rejects a stale command and lets a cancellation through.
			if i < 3 || (r.Type == Cancel && i < maxCancelRaces) {
				continue
			}
		}
		if err != nil {
			return r, err
		}
		if r.Type == End {
			if _, err := s.flow.AppendEvent(ctx, actionflow.Event{Type: "execution.ended", SessionID: next.SessionID, ExecutionID: next.ExecutionID},
				map[string]any{"execution_version": next.Version, "end": next.End, "command_id": r.CommandID}); err != nil {
				s.log.Warn("execution.ended event not appended", "execution_id", next.ExecutionID, "error", err)
			}
		}
		return s.finish(ctx, o, *next, r, next.Version)
	}
}

// finish runs the applied command's effects (idempotent) and completes the record.
func (s *Service) finish(ctx context.Context, o Owner, e actionflow.Execution, r Record, resultVersion int64) (Record, error) {
	switch r.Type {
	case Cancel:
		reached, err := s.cancelActions(ctx, o, e, &r)
		if err != nil {
			return r, err
		}
		r.Descendants = reached
	case End:
		// The execution has ended: its unstarted actions are closed and
		// their waits cancelled; started ones finish and record.
		if err := s.closeUnstarted(ctx, e, "execution_ended"); err != nil {
			return r, err
		}
	case Continue, Step:
		// Actions a revision block held start now (their revision is
		// selected again); none when nothing was held.
		// A failure leaves them to the recovery sweeper (their machines do
		// not exist), not the command unapplied.
		if err := s.flow.StartHeld(ctx, e.ExecutionID); err != nil {
			s.log.Warn("held actions not started; the sweeper starts them", "execution_id", e.ExecutionID, "error", err)
		}
	}
	return s.complete(ctx, e, r, StatusApplied, "", resultVersion, "")
}

// complete marks the record applied or rejected (compare-and-swap on the
// record). After a conflict only the same completion already stored (same
// status, and for an application the same result version and child) is
// accepted; any other stored completion is a *CompletionConflictError.
func (s *Service) complete(ctx context.Context, e actionflow.Execution, r Record, st Status, reason string, resultVersion int64, child ids.ExecutionID) (Record, error) {
	proposed := r
	now := s.flow.Now()
	proposed.Status, proposed.Reason, proposed.ResultVersion, proposed.Child, proposed.DoneAt = st, reason, resultVersion, child, &now
	proposed.Version = r.Version + 1
	// The completion and its command.applied / command.rejected event are
	// one transaction (an entry of the session's decision log).
	typ := "command.applied"
	if st != StatusApplied {
		typ = "command.rejected"
	}
	ev, data := eventOf(e, typ, proposed)
	_, err := s.flow.TransactWithEvent(ctx, []store.Write{store.CASOf(commandItem(proposed), r.Version, 0)}, ev, data)
	var vc *store.VersionConflictError
	if errors.As(err, &vc) {
		stored, gerr := s.getRecord(ctx, r.ExecutionID, r.CommandID)
		if gerr != nil {
			return r, gerr
		}
		if stored.Status == st && stored.ExecutionID == r.ExecutionID && stored.ResultVersion == resultVersion && stored.Child == child &&
			(st != StatusRejected || stored.Reason == reason) {
			return stored, nil
		}
		return stored, &CompletionConflictError{Stored: stored, Proposed: proposed}
	}
	if err != nil {
		return r, fmt.Errorf("complete command %s: %w", r.CommandID, err)
	}
	s.log.Info("command "+string(st), "execution_id", r.ExecutionID, "command_id", r.CommandID, "type", r.Type,
		"reason", reason, "result_version", resultVersion)
	return proposed, nil
}
