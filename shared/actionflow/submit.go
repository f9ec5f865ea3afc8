package actionflow

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gowebpki/jcs"
	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// MaxArgumentsBytes bounds a tool call's arguments (kept inline on the
// action item, well inside DynamoDB's 400 KB item limit).
const MaxArgumentsBytes = 128 << 10

// SubmitRequest is a tool call submitted by an agent.
type SubmitRequest struct {
	SessionID   ids.SessionID
	ExecutionID ids.ExecutionID // empty: a new execution
	ToolCallID  ids.ToolCallID
	Tool        string
	Arguments   json.RawMessage
	Interactive bool
	// IdempotencyKey: the same key with the same body returns the same
	// action; with a different body it is a conflict. Empty: always new.
	IdempotencyKey string
	Principal      Principal
}

// Submit prepares an action (put-once) and starts its state machine
// execution (name = action id, idempotent). It returns the action and
// whether it was created by this call.
func (s *Service) Submit(ctx context.Context, req SubmitRequest) (Action, bool, error) {
	if err := validateSubmit(req); err != nil {
		return Action{}, false, err
	}
	id, err := s.cfg.Contracts.Of(req.Tool, req.Arguments)
	if err != nil {
		var ae *identity.ArgumentsError
		if errors.As(err, &ae) {
			return Action{}, false, &ValidationError{Field: "arguments", Msg: ae.Err.Error()}
		}
		return Action{}, false, err
	}
	reqDigest, err := requestDigest(req)
	if err != nil {
		return Action{}, false, &ValidationError{Field: "arguments", Msg: err.Error()}
	}
	actionID := ids.NewActionID()
	if req.IdempotencyKey != "" {
		claimed, err := s.claimKey(ctx, req.SessionID, req.IdempotencyKey, actionID, reqDigest)
		if err != nil {
			return Action{}, false, err
		}
		if claimed != actionID {
			existing, err := s.getAction(ctx, claimed)
			if err == nil {
				return s.resubmit(ctx, existing, reqDigest)
			}
			var nf *NotFoundError
			if !errors.As(err, &nf) {
				return Action{}, false, err
			}
			// The key was claimed but the action never written (a crash in
			// between): create it now under the claimed id.
			actionID = claimed
		}
	}
	execID := req.ExecutionID
	if execID == "" {
		execID = ids.NewExecutionID()
	}
	exe, err := s.ensureExecution(ctx, execID, req.SessionID)
	if err != nil {
		return Action{}, false, err
	}
	if exe.SessionID != req.SessionID {
		return Action{}, false, &NotFoundError{What: "execution " + string(execID)}
	}
	now := s.now()
	canonArgs, _ := jcs.Transform(req.Arguments)
	a := Action{
		ActionID: actionID, ExecutionID: execID, SessionID: req.SessionID, RunID: exe.RunID,
		ToolCallID: req.ToolCallID, Tool: req.Tool, Arguments: canonArgs, ArgsDigest: id.Digest,
		RequestDigest: reqDigest, Interactive: req.Interactive, Origin: req.Principal.Subject,
		States: lifecycle.NewStates(), CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	if err := s.cfg.Store.PutOnce(ctx, s.actionItem(a)); err != nil {
		var ce *store.ConflictError
		if errors.As(err, &ce) {
			existing, derr := decode[Action](ce.Existing, "action")
			existing.Version = ce.Existing.Version
			if derr != nil {
				return Action{}, false, derr
			}
			return s.resubmit(ctx, existing, reqDigest)
		}
		return Action{}, false, fmt.Errorf("prepare action %s: %w", actionID, err)
	}
	if _, err := s.appendEvent(ctx, Event{Type: "action.submitted", SessionID: a.SessionID, ExecutionID: a.ExecutionID, ActionID: a.ActionID},
		map[string]any{"tool": a.Tool, "tool_call_id": a.ToolCallID, "args_digest": a.ArgsDigest, "states": a.States}); err != nil {
		return a, true, err
	}
	return a, true, s.start(ctx, a)
}

func (s *Service) resubmit(ctx context.Context, existing Action, reqDigest string) (Action, bool, error) {
	if existing.RequestDigest != reqDigest {
		return existing, false, &ConflictError{Code: "idempotency_key_reused",
			Msg: "the idempotency key was used for a different request (action " + string(existing.ActionID) + ")"}
	}
	// Starting again is idempotent; it also heals a crash between the put and the start.
	return existing, false, s.start(ctx, existing)
}

func (s *Service) start(ctx context.Context, a Action) error {
	if s.cfg.Starter == nil {
		return errors.New("actionflow: no Starter configured")
	}
	in := encode(StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID})
	if err := s.cfg.Starter.StartAction(ctx, a.ActionID, in); err != nil {
		return fmt.Errorf("start state machine for %s: %w", a.ActionID, err)
	}
	return nil
}

// StartAction (re)starts the state machine of a prepared action; used by recovery.
func (s *Service) StartAction(ctx context.Context, a Action) error { return s.start(ctx, a) }

func validateSubmit(r SubmitRequest) error {
	if err := ids.Validate("session_id", string(r.SessionID)); err != nil {
		return &ValidationError{Field: "session_id", Msg: err.Error()}
	}
	if r.ExecutionID != "" {
		if err := ids.Validate("execution_id", string(r.ExecutionID)); err != nil {
			return &ValidationError{Field: "execution_id", Msg: err.Error()}
		}
	}
	if err := ids.Validate("tool_call_id", string(r.ToolCallID)); err != nil {
		return &ValidationError{Field: "tool_call_id", Msg: err.Error()}
	}
	if r.Tool == "" || len(r.Tool) > 128 || strings.ContainsAny(r.Tool, " \t\n#()") {
		return &ValidationError{Field: "tool", Msg: fmt.Sprintf("tool name %q must be 1..128 characters without spaces, '#' or parentheses", r.Tool)}
	}
	if len(r.Arguments) == 0 {
		return &ValidationError{Field: "arguments", Msg: "required (a JSON object)"}
	}
	if len(r.Arguments) > MaxArgumentsBytes {
		return &ValidationError{Field: "arguments", Msg: fmt.Sprintf("%d bytes, more than the %d byte limit", len(r.Arguments), MaxArgumentsBytes)}
	}
	if len(r.IdempotencyKey) > 200 {
		return &ValidationError{Field: "Idempotency-Key", Msg: "longer than 200 characters"}
	}
	return nil
}

// idempotencyRecord binds an idempotency key to the action it created.
type idempotencyRecord struct {
	ActionID      ids.ActionID `json:"action_id"`
	RequestDigest string       `json:"request_digest"`
}

// claimKey binds (session, key) to actionID with a put-once, or returns the
// action id the key is already bound to. Action ids stay time-ordered
// ULIDs (they cluster in the store's indexes); only this one small item
// per submission is keyed by the caller's key. A key reused for another
// request is a conflict.
func (s *Service) claimKey(ctx context.Context, session ids.SessionID, key string, actionID ids.ActionID, reqDigest string) (ids.ActionID, error) {
	sum := sha256.Sum256([]byte(key))
	it := store.Item{PK: sessionPK(session), SK: fmt.Sprintf("IDEMP#%x", sum[:16]), Version: 1,
		Body: encode(idempotencyRecord{ActionID: actionID, RequestDigest: reqDigest})}
	err := s.cfg.Store.PutOnce(ctx, it)
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		prev, derr := decode[idempotencyRecord](ce.Existing, "idempotency key")
		if derr != nil {
			return "", derr
		}
		if prev.RequestDigest != reqDigest {
			return "", &ConflictError{Code: "idempotency_key_reused",
				Msg: "the idempotency key was used for a different request (action " + string(prev.ActionID) + ")"}
		}
		return prev.ActionID, nil
	}
	if err != nil {
		return "", fmt.Errorf("claim idempotency key: %w", err)
	}
	return actionID, nil
}

func requestDigest(r SubmitRequest) (string, error) {
	body, err := json.Marshal(map[string]any{
		"tool": r.Tool, "arguments": r.Arguments, "tool_call_id": r.ToolCallID,
		"execution_id": r.ExecutionID, "interactive": r.Interactive,
	})
	if err != nil {
		return "", err
	}
	canon, err := jcs.Transform(body)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return fmt.Sprintf("sha256:%x", sum), nil
}
