package actionflow

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// Bounds of a reconciliation's text (the whole record stays far below the
// 384 KiB item body; larger evidence goes to the blob store and is named
// by EvidenceRef).
const (
	MaxReconcileNote        = 4 << 10
	MaxReconcileEvidence    = 64 << 10
	MaxReconcileEvidenceRef = 1 << 10
)

// ReconcileRequest is what a human says about an action whose outcome is
// unknown, after checking its effects.
type ReconcileRequest struct {
	// Outcome is succeeded or failed.
	Outcome lifecycle.Outcome `json:"outcome"`
	// Note says what the person checked (required).
	Note string `json:"note"`
	// Evidence is optional text evidence (a command's output, a link).
	Evidence string `json:"evidence,omitempty"`
	// EvidenceRef is an optional blob reference (result_ref style) of
	// larger evidence.
	EvidenceRef string `json:"evidence_ref,omitempty"`
}

// Reconciliation is the write-once record of a human's reconciliation,
// stored beside the sealed receipt (ACTION#<id>/RECONCILIATION). The
// receipt keeps saying unknown: it is what the lifecycle knew from durable
// evidence; this record is what a person established afterwards.
type Reconciliation struct {
	ActionID    ids.ActionID    `json:"action_id"`
	ExecutionID ids.ExecutionID `json:"execution_id"`
	SessionID   ids.SessionID   `json:"session_id"`
	ReconcileRequest
	// ReceiptDigest is the digest of the unknown receipt it resolves.
	ReceiptDigest string    `json:"receipt_digest"`
	ReconciledBy  Principal `json:"reconciled_by"`
	ReconciledAt  time.Time `json:"reconciled_at"`
	// Digest identifies the request's content (outcome, note, evidence):
	// the same request again is an idempotent repeat, another a conflict.
	Digest string `json:"digest"`
}

func reconciliationKey(id ids.ActionID) store.Key {
	return store.Key{PK: "ACTION#" + string(id), SK: "RECONCILIATION"}
}

func reconcileDigest(r ReconcileRequest) string {
	b, _ := json.Marshal(map[string]any{"outcome": r.Outcome, "note": r.Note, "evidence": r.Evidence, "evidence_ref": r.EvidenceRef})
	sum := sha256.Sum256(b)
	return fmt.Sprintf("sha256:%x", sum)
}

// Validate names the first field of r that is wrong.
func (r ReconcileRequest) Validate() error {
	switch {
	case r.Outcome == "":
		return &ValidationError{Field: "outcome", Msg: "outcome is required: succeeded or failed"}
	case r.Outcome != lifecycle.OutcomeSucceeded && r.Outcome != lifecycle.OutcomeFailed:
		return &ValidationError{Field: "outcome", Msg: "outcome must be succeeded or failed, not " + string(r.Outcome)}
	case strings.TrimSpace(r.Note) == "":
		return &ValidationError{Field: "note", Msg: "note is required: say what you checked"}
	case len(r.Note) > MaxReconcileNote:
		return &ValidationError{Field: "note", Msg: fmt.Sprintf("note is longer than %d bytes", MaxReconcileNote)}
	case len(r.Evidence) > MaxReconcileEvidence:
		return &ValidationError{Field: "evidence", Msg: fmt.Sprintf("evidence is longer than %d bytes; store it as a blob and pass evidence_ref", MaxReconcileEvidence)}
	case len(r.EvidenceRef) > MaxReconcileEvidenceRef:
		return &ValidationError{Field: "evidence_ref", Msg: fmt.Sprintf("evidence_ref is longer than %d bytes", MaxReconcileEvidenceRef)}
	}
	return nil
}

// GetReconciliation reads an action's reconciliation record
// (store.ErrNotFound when it has none).
func (s *Service) GetReconciliation(ctx context.Context, id ids.ActionID) (Reconciliation, error) {
	it, err := s.cfg.Store.Get(ctx, reconciliationKey(id))
	if err != nil {
		return Reconciliation{}, err
	}
	return decode[Reconciliation](it, "reconciliation")
}

// Reconcile applies a human's reconciliation of an action whose outcome is
// unknown, exactly once. In one transaction it puts the reconciliation
// record once, moves the action's outcome to the reconciled one
// (lifecycle.States.WithReconciliation, which also takes the action out of
// its execution's RECONCILE# index: Needs attention), folds it into the
// execution's checkpoint (Checkpoint.Reconciled; the recent-failure map
// is left alone) and appends the action.reconciled event. The sealed
// receipt is never rewritten.
//
// Answers: the record and true when this call applied it; the stored
// record and false for the same request again (idempotent); a
// *ConflictError "already_reconciled" carrying the first record for a
// different one; a *ConflictError "not_reconcilable" (with the action)
// when the outcome is not an unknown one that was delivered; a
// *ForbiddenError for anyone but a human or an admin (checked before
// anything is read); a *ValidationError naming a wrong field.
func (s *Service) Reconcile(ctx context.Context, id ids.ActionID, req ReconcileRequest, by Principal) (Reconciliation, bool, error) {
	if by.Role != "human" && by.Role != "admin" {
		return Reconciliation{}, false, &ForbiddenError{Msg: "only a human owner may reconcile an unknown outcome"}
	}
	if err := req.Validate(); err != nil {
		return Reconciliation{}, false, err
	}
	digest := reconcileDigest(req)
	for i := 0; ; i++ {
		a, err := s.getAction(ctx, id)
		if err != nil {
			return Reconciliation{}, false, err
		}
		if by.Role != "admin" && by.Session != a.SessionID {
			return Reconciliation{}, false, &ForbiddenError{Msg: "the action belongs to another session"}
		}
		if prev, err := s.GetReconciliation(ctx, id); err == nil {
			return s.repeated(prev, digest)
		} else if !errors.Is(err, store.ErrNotFound) {
			return Reconciliation{}, false, fmt.Errorf("reconcile %s: %w", id, err)
		}
		st, err := a.States.WithReconciliation(req.Outcome)
		if err != nil {
			return Reconciliation{}, false, &ConflictError{Code: "not_reconcilable",
				Msg: fmt.Sprintf("action %s has outcome %s (delivery %s): only a delivered unknown outcome is reconciled", id, show(a.States.Outcome), a.States.Delivery), Current: a}
		}
		rc, err := s.getReceipt(ctx, id)
		if err != nil {
			return Reconciliation{}, false, fmt.Errorf("reconcile %s: receipt: %w", id, err)
		}
		ck, err := s.GetCheckpoint(ctx, a.ExecutionID)
		if err != nil {
			return Reconciliation{}, false, err
		}
		rec := Reconciliation{ActionID: a.ActionID, ExecutionID: a.ExecutionID, SessionID: a.SessionID,
			ReconcileRequest: req, ReceiptDigest: rc.Digest, ReconciledBy: by, ReconciledAt: s.now(), Digest: digest}
		k := reconciliationKey(id)
		put := store.PutOnceWrite(store.Item{PK: k.PK, SK: k.SK, Version: 1,
			GSI1PK: sessionPK(a.SessionID), GSI1SK: "RECONCILIATION#" + string(id), Body: encode(rec)})

		a.States, a.ReconciledBy = st, &by
		actionW, _ := s.actionWrite(&a, 0)

		// The fold counts the reconciliation and leaves the recent-failure
		// map alone: a person's account of effects is not an executor's
		// deterministic failure, so it spends no repeat budget.
		ck.Reconciled++
		ck.UpdatedAt = s.now()
		ck.Version++

		ev, evW := s.eventWrite(Event{Type: "action.reconciled", SessionID: a.SessionID, ExecutionID: a.ExecutionID, ActionID: a.ActionID},
			map[string]any{"outcome": req.Outcome, "states": a.States, "reconciled_by": by, "note": req.Note,
				"receipt_digest": rc.Digest, "tool": a.Tool})
		ck.ExecutionID = a.ExecutionID
		writes := append([]store.Write{put, actionW, evW}, checkpointWrites(ck)...)
		seqs, err := s.cfg.Store.Transact(ctx, writes)
		var te *store.TransactError
		var vc *store.VersionConflictError
		switch {
		case err == nil:
		case errors.As(err, &te) && te.Index == 0 && errors.Is(err, store.ErrConflict):
			continue // reconciled meanwhile: answer with the stored record
		case (errors.As(err, &vc) || checkpointRaceLost(err, writes)) && i < 8:
			continue // the action or the checkpoint moved: read again
		default:
			return Reconciliation{}, false, fmt.Errorf("reconcile %s: %w", id, err)
		}
		ev = s.logged(ev, seqs[2])
		s.logFor(&a).Info("outcome reconciled", "outcome", req.Outcome, "by", by.Subject, "receipt_digest", rc.Digest)
		if s.cfg.Publisher != nil {
			if perr := s.cfg.Publisher.Publish(ctx, ev); perr != nil {
				s.log.Warn("event not published; it is in the durable log", "type", ev.Type, "seq", ev.Seq, "error", perr)
			}
		}
		return rec, true, nil
	}
}

// repeated answers a reconciliation request for an action already
// reconciled: the same request is an idempotent success, another one a
// conflict carrying the first record, which stands.
func (s *Service) repeated(prev Reconciliation, digest string) (Reconciliation, bool, error) {
	if prev.Digest == digest {
		return prev, false, nil
	}
	return prev, false, &ConflictError{Code: "already_reconciled",
		Msg:     fmt.Sprintf("action %s was already reconciled as %s by %s", prev.ActionID, prev.Outcome, prev.ReconciledBy.Subject),
		Current: prev}
}

func show(o lifecycle.Outcome) string {
	if o == lifecycle.OutcomeOpen {
		return "none"
	}
	return string(o)
}
