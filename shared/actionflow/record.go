package actionflow

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// RecordOutput is the record step's result: the receipt's outcome, the
// action's delivery and states once projected, the checkpoint version
// that holds the receipt and the sequence number of the action.projected
// event in the session's log.
type RecordOutput struct {
	Outcome           lifecycle.Outcome  `json:"outcome"`
	Delivery          lifecycle.Delivery `json:"delivery"`
	CheckpointVersion int64              `json:"checkpoint_version"`
	States            lifecycle.States   `json:"states"`
	Seq               int64              `json:"seq"`
}

// ReceiptConflictError: a different receipt is already sealed for the
// action. The stored one stands (a known result never changes).
type ReceiptConflictError struct {
	Stored   Receipt
	Proposed Receipt
}

func (e *ReceiptConflictError) Error() string {
	return fmt.Sprintf("receipt of %s already sealed as %s (digest %s); refused %s (digest %s)",
		e.Stored.ActionID, e.Stored.Outcome, e.Stored.Digest, e.Proposed.Outcome, e.Proposed.Digest)
}
func (e *ReceiptConflictError) Is(t error) bool { return t == store.ErrConflict }

// Record is the record step, the last of the state machine: it seals the
// result receipt (write-once) before checkpoint serialization, then, in one
// transaction, folds it into the execution's checkpoint (compare-and-swap
// on version), moves the action to its outcome and delivery projected and
// appends the action.projected event; then it publishes that event. A
// checkpoint failure leaves the receipt standing and is a
// *CheckpointError, reported as a runtime failure separate from the tool
// outcome; a failed publish is a *TransientError, and the step, repeated,
// publishes the stored event again (it never folds or projects twice).
func (s *Service) Record(ctx context.Context, in StepInput) (RecordOutput, error) {
	out, err := s.record(ctx, in, "record")
	return out, stepError("record "+string(in.ActionID), err)
}

// Recover is the record step run by the recovery sweeper: it seals a
// missing receipt from durable evidence only (start evidence and a result
// stored on the action; never an executor, never tool text), or, when the
// receipt is already sealed, only rebuilds the checkpoint from it. A sealed
// receipt is never changed.
func (s *Service) Recover(ctx context.Context, in StepInput) (RecordOutput, error) {
	in.Result = nil // only what is durable counts
	out, err := s.record(ctx, in, "recover")
	if err != nil {
		return out, fmt.Errorf("recover %s: %w", in.ActionID, err)
	}
	return out, nil
}

func (s *Service) record(ctx context.Context, in StepInput, by string) (RecordOutput, error) {
	a, err := s.getAction(ctx, in.ActionID)
	if err != nil {
		return RecordOutput{}, err
	}
	var rc Receipt
	if a.Start != nil && a.Result != nil {
		// The common case (a dispatched action with its result stored):
		// seal straight away; a receipt sealed before stands.
		if proposed, perr := s.receiptFor(a, in, by); perr == nil {
			rc, err = s.sealFromResult(ctx, a, proposed, by)
			if err != nil {
				return RecordOutput{}, err
			}
			return s.finishRecord(ctx, a, rc)
		}
	}
	rc, err = s.getReceipt(ctx, a.ActionID)
	switch {
	case err == nil:
		// Already sealed: a repeated record only completes the checkpoint.
	case errors.Is(err, store.ErrNotFound):
		if a.Start == nil {
			// Close the action before sealing not_started: a dispatch claim
			// racing this record either wrote its start evidence first (and
			// the receipt says what the evidence says) or is refused.
			if a, err = s.closeForReceipt(ctx, a.ActionID, in); err != nil {
				return RecordOutput{}, err
			}
		}
		proposed, perr := s.receiptFor(a, in, by)
		if perr != nil {
			return RecordOutput{}, perr
		}
		if rc, err = s.sealFromResult(ctx, a, proposed, by); err != nil {
			return RecordOutput{}, err
		}
	default:
		return RecordOutput{}, err
	}
	return s.finishRecord(ctx, a, rc)
}

// sealFromResult seals proposed, or takes the receipt sealed before it
// (which stands), and reports a fresh one.
func (s *Service) sealFromResult(ctx context.Context, a Action, proposed Receipt, by string) (Receipt, error) {
	rc, fresh, err := s.sealReceipt(ctx, proposed)
	if err != nil {
		var rce *ReceiptConflictError
		if !errors.As(err, &rce) {
			return rc, err
		}
		rc, fresh = rce.Stored, false
	}
	if fresh {
		if rc.Outcome == lifecycle.OutcomeUnknown {
			s.cfg.Metrics.UnknownOutcome(a.Tool)
		}
		s.logFor(&a).Info("receipt sealed", "outcome", rc.Outcome, "error_code", rc.ErrorCode, "recorded_by", by)
	}
	return rc, nil
}

// finishRecord folds the sealed receipt into the checkpoint and projects
// the action in one transaction, then publishes the projection event.
func (s *Service) finishRecord(ctx context.Context, a Action, rc Receipt) (RecordOutput, error) {
	if err := faults.At(ctx, faults.AfterReceipt); err != nil {
		return RecordOutput{}, err
	}
	ck, a, ev, appended, err := s.foldCheckpoint(ctx, a, rc)
	if err != nil {
		var pe *PermanentError
		if errors.As(err, &pe) {
			return RecordOutput{}, err
		}
		return RecordOutput{}, &CheckpointError{ActionID: string(a.ActionID), Msg: err.Error()}
	}
	if !appended {
		// Projected before (a repeat of this step, or of one whose publish
		// failed): publish the event stored then.
		if ev, err = s.projectionEvent(ctx, a, rc); err != nil {
			return RecordOutput{}, err
		}
	}
	if err := faults.At(ctx, faults.AfterCheckpoint); err != nil {
		return RecordOutput{}, err
	}
	if err := s.publishProjection(ctx, ev); err != nil {
		return RecordOutput{}, err
	}
	if err := faults.At(ctx, faults.AfterProjection); err != nil {
		return RecordOutput{}, err
	}
	return RecordOutput{Outcome: rc.Outcome, Delivery: a.States.Delivery, CheckpointVersion: ck.Version, States: a.States, Seq: ev.Seq}, nil
}

// receiptFor decides the outcome from durable evidence, never from tool text:
//   - a dispatch result (stored on the action, or passed by the state machine) -> its outcome;
//   - start evidence without a trustworthy result -> unknown, reconciliation required;
//   - no start evidence -> not_started, with the decision's or the failure's reason.
func (s *Service) receiptFor(a Action, in StepInput, by string) (Receipt, error) {
	rc := Receipt{ActionID: a.ActionID, ExecutionID: a.ExecutionID, SessionID: a.SessionID, ToolCallID: a.ToolCallID,
		Tool: a.Tool, ArgsDigest: a.ArgsDigest, Revision: a.Revision, Start: a.Start, RecordedAt: s.now(), RecordedBy: by}
	if a.Decision != nil {
		rc.PolicyVersion = a.Decision.PolicyVersion
	}
	var res *ToolResult
	switch {
	case a.Result != nil:
		res = a.Result // durable, written by the owning attempt
	case in.Result != nil && in.Result.Outcome != lifecycle.OutcomeOpen:
		res = in.Result
	}
	switch {
	case a.Start != nil && res != nil:
		rc.ToolResult = *res
		if rc.Outcome == lifecycle.OutcomeNotStarted || rc.Outcome == lifecycle.OutcomeOpen {
			rc.Outcome, rc.ErrorCode = lifecycle.OutcomeUnknown, "executor_claimed_not_started"
		}
	case a.Start != nil:
		rc.Outcome = lifecycle.OutcomeUnknown
		rc.ErrorCode = "start_evidence_without_result"
		if in.Error != nil {
			rc.ErrorCode, rc.Error = "dispatch_"+in.Error.Error, in.Error.Cause
		}
	default:
		rc.Outcome = lifecycle.OutcomeNotStarted
		switch {
		case a.Invalid != nil:
			rc.ErrorCode, rc.Error, rc.Validation = "invalid_arguments", a.Invalid.Summary(), a.Invalid.Problems
		case a.Decision != nil && a.States.Permission == lifecycle.PermissionDeny && a.Decision.Reason.Source == "invalid_arguments":
			rc.ErrorCode, rc.Error = "invalid_arguments", a.Decision.Reason.Detail
		case a.Decision != nil && a.States.Permission == lifecycle.PermissionDeny:
			rc.ErrorCode, rc.Error = "permission_denied:"+a.Decision.Reason.Code, a.Decision.Reason.Detail
		case in.Error != nil && in.Error.Error == ApprovalDeclined:
			rc.ErrorCode, rc.Error = "approval_declined", in.Error.Cause
		case in.Error != nil && in.Error.Error == "States.Timeout" && a.Decision != nil && a.Decision.Executor == ExecutorQuestion:
			rc.ErrorCode, rc.Error = "question_expired", "the question was not answered in time; expiry is never an answer"
		case in.Error != nil && (in.Error.Error == "States.Timeout" || in.Error.Error == "States.HeartbeatTimeout"):
			rc.ErrorCode, rc.Error = "approval_expired", "the approval wait timed out; expiry is never approval"
		case in.Error != nil:
			rc.ErrorCode, rc.Error = in.Error.Error, in.Error.Cause
		case res != nil:
			rc.ErrorCode, rc.Error = res.ErrorCode, res.Error
		default:
			rc.ErrorCode = "not_dispatched"
		}
	}
	if rc.Outcome == lifecycle.OutcomeUnknown {
		rc.Reconciliation = "the operation may have started; check its effects, then resolve the action as succeeded or failed. It is never re-dispatched automatically."
	}
	if _, err := (lifecycle.States{Permission: lifecycle.PermissionAllow, Started: a.Start != nil, Delivery: lifecycle.DeliveryPending}).WithOutcome(rc.Outcome); err != nil && rc.Outcome != lifecycle.OutcomeNotStarted {
		return rc, &PermanentError{Code: "illegal_outcome", Msg: err.Error()}
	}
	rc.Digest = receiptDigest(rc)
	return rc, nil
}

func receiptDigest(rc Receipt) string {
	core := map[string]any{
		"action_id": rc.ActionID, "tool_call_id": rc.ToolCallID, "args_digest": rc.ArgsDigest,
		"outcome": rc.Outcome, "error_code": rc.ErrorCode, "result_digest": rc.ResultDigest,
		"output": rc.Output, "started": rc.Start != nil,
	}
	b, _ := json.Marshal(core)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("sha256:%x", sum)
}

// SealReceipt writes a receipt once. The same receipt again (same digest)
// is an idempotent success; a different one is a *ReceiptConflictError
// carrying the stored receipt, which stands.
func (s *Service) SealReceipt(ctx context.Context, rc Receipt) (Receipt, error) {
	rc, _, err := s.sealReceipt(ctx, rc)
	return rc, err
}

// sealReceipt is SealReceipt that also says whether this call sealed it.
func (s *Service) sealReceipt(ctx context.Context, rc Receipt) (Receipt, bool, error) {
	if rc.Digest == "" {
		rc.Digest = receiptDigest(rc)
	}
	k := receiptKey(rc.ActionID)
	err := s.cfg.Store.PutOnce(ctx, store.Item{PK: k.PK, SK: k.SK, Version: 1,
		GSI1PK: sessionPK(rc.SessionID), GSI1SK: "RECEIPT#" + string(rc.ActionID), Body: encode(rc)})
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		stored, derr := decode[Receipt](ce.Existing, "receipt")
		if derr != nil {
			return rc, false, derr
		}
		if stored.Digest == rc.Digest {
			return stored, false, nil
		}
		return stored, false, &ReceiptConflictError{Stored: stored, Proposed: rc}
	}
	if err != nil {
		return rc, false, fmt.Errorf("seal receipt %s: %w", rc.ActionID, err)
	}
	return rc, true, nil
}

// foldCheckpoint folds a sealed receipt into the execution's checkpoint
// (the put-once of its next version's saved point) and, in the same
// transaction, moves the action to the receipt's outcome and delivery
// projected (through recorded, by the one set of transition rules) and
// appends its action.projected event. Delivery past pending says the
// checkpoint holds the receipt, durably and for good (the checkpoint lists
// no actions), so recovery never folds a receipt twice; the state change
// and its event exist together or not at all. An action left recorded (by
// a record step of an earlier revision, whose Project state did not run)
// is projected without folding again. Lost races (parallel actions of one
// execution, a concurrent step on the action) are read again and retried.
// It returns the checkpoint, the action as stored and the event it
// appended (appended is false when the action was projected already).
func (s *Service) foldCheckpoint(ctx context.Context, a Action, rc Receipt) (ck Checkpoint, _ Action, _ Event, appended bool, _ error) {
	for i := 0; ; i++ {
		if i > 0 {
			var err error
			if a, err = s.getAction(ctx, a.ActionID); err != nil {
				return Checkpoint{}, a, Event{}, false, err
			}
		}
		ck, err := s.GetCheckpoint(ctx, a.ExecutionID)
		if err != nil {
			return ck, a, Event{}, false, err
		}
		st, err := projectedStates(a.States, rc)
		if err != nil {
			return ck, a, Event{}, false, &PermanentError{Code: "illegal_transition", Msg: err.Error()}
		}
		var writes []store.Write
		if a.States.Delivery == lifecycle.DeliveryPending && !ck.folded(a.ActionID) {
			id := identity.Identity{Tool: a.Tool, Digest: a.ArgsDigest}
			switch rc.Outcome {
			case lifecycle.OutcomeFailed:
				ck.RecentFailures.Record(id, rc.ErrorCode, rc.PolicyVersion)
			case lifecycle.OutcomeSucceeded:
				ck.RecentFailures.Clear(id)
			}
			ck.Recorded++
			ck.LastActionID = a.ActionID
			ck.Revision = rc.Revision
			ck.UpdatedAt = s.now()
			ck.ExecutionID = a.ExecutionID
			ck.Version++
			writes = append(writes, checkpointWrites(ck)...)
		}
		if st == a.States {
			return ck, a, Event{}, false, nil // projected already (so folded)
		}
		next := a
		next.States = st
		w, _ := s.actionWrite(&next, 0)
		e, data := projectionEventOf(&next, rc)
		e, ew := s.eventWrite(e, data)
		writes = append(writes, w, ew)
		seqs, err := s.cfg.Store.Transact(ctx, writes)
		var vc *store.VersionConflictError
		if (errors.As(err, &vc) || checkpointRaceLost(err, writes)) && i < 16 {
			continue
		}
		if err != nil {
			return ck, a, Event{}, false, fmt.Errorf("fold receipt %s into checkpoint: %w", a.ActionID, err)
		}
		return ck, next, s.logged(e, seqs[len(seqs)-1]), true, nil
	}
}

// closeForReceipt closes an action without start evidence before its
// not_started receipt is sealed, and returns it as stored afterwards.
func (s *Service) closeForReceipt(ctx context.Context, id ids.ActionID, in StepInput) (Action, error) {
	reason := "not_dispatched"
	if in.Error != nil {
		reason = in.Error.Error
	}
	return s.updateAction(ctx, id, 0, func(a *Action) error {
		if a.Start != nil || a.Closed != nil {
			return errStop
		}
		a.Closed = &Closure{Reason: reason, At: s.now()}
		return nil
	})
}

// ActionRecorded reports whether the action's receipt is folded into its
// execution's checkpoint (delivery recorded or projected), or, for an
// action whose record step stopped between the fold and marking the
// action (possible only in stores written before the two were one
// transaction), whether the checkpoint lists it.
func (s *Service) ActionRecorded(ctx context.Context, a Action) (bool, error) {
	if a.States.Delivery != lifecycle.DeliveryPending {
		return true, nil
	}
	ck, err := s.GetCheckpoint(ctx, a.ExecutionID)
	if err != nil {
		return false, err
	}
	return ck.folded(a.ActionID), nil
}
