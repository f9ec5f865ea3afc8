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
	// IterationLimit (1..MaxIterationLimit, 0: none) is set on the
	// execution this submission starts; continuing an execution with a
	// different limit is refused.
	IterationLimit int
	// Title (ValidateTitle; "": none) is set on the execution this
	// submission starts; continuing an execution with a different title
	// is refused.
	Title string
}

// Submit prepares an action (put-once) and starts its state machine
// execution (name = action id, idempotent). It returns the action and
// whether it was created by this call. Preparing checks the arguments
// against the tool's contract and the workspace (checkArguments): an
// invalid call is prepared all the same, marked Invalid, and its first
// authorization refuses it, so it ends not_started before any start
// evidence and before the permission engine is asked.
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
	var claim *store.Item
	if req.IdempotencyKey != "" {
		it := idempotencyItem(req.SessionID, req.IdempotencyKey, actionID, reqDigest)
		// The claim is written with the action (below) and a concurrent
		// claim loses there. Reading it first is only needed when this
		// request would otherwise create a new execution for nothing.
		var (
			prev  ids.ActionID
			found bool
			err   error
		)
		if req.ExecutionID == "" {
			prev, found, err = s.boundKey(ctx, it.Key(), reqDigest)
		}
		if err != nil {
			return Action{}, false, err
		}
		if found {
			existing, err := s.getAction(ctx, prev)
			if err == nil {
				return s.resubmit(ctx, existing, reqDigest)
			}
			var nf *NotFoundError
			if !errors.As(err, &nf) {
				return Action{}, false, err
			}
			// The key is bound but its action was never written (a store
			// written before the claim and the action were one
			// transaction): create the action now under the bound id.
			actionID = prev
		} else {
			claim = &it
		}
	}
	execID := req.ExecutionID
	if execID == "" {
		execID = ids.NewExecutionID()
	}
	exe, err := s.ensureExecution(ctx, execID, req.SessionID, req.IterationLimit, req.Title)
	if err != nil {
		return Action{}, false, err
	}
	if exe.SessionID != req.SessionID {
		return Action{}, false, &NotFoundError{What: "execution " + string(execID)}
	}
	if req.IterationLimit != 0 && req.IterationLimit != exe.IterationLimit {
		return Action{}, false, &ValidationError{Field: "iteration_limit",
			Msg: fmt.Sprintf("an execution's iteration limit is set when it starts; %s has %d", execID, exe.IterationLimit)}
	}
	if req.Title != "" && req.Title != exe.Title {
		return Action{}, false, &ValidationError{Field: "title",
			Msg: fmt.Sprintf("an execution's title is set when it starts; %s has %s", execID, quoteOrNone(exe.Title))}
	}
	now := s.now()
	canonArgs, _ := jcs.Transform(req.Arguments)
	a := Action{
		ActionID: actionID, ExecutionID: execID, SessionID: req.SessionID, RunID: exe.RunID,
		ToolCallID: req.ToolCallID, Tool: req.Tool, Arguments: canonArgs, ArgsDigest: id.Digest,
		RequestDigest: reqDigest, Interactive: req.Interactive, Origin: req.Principal.Subject,
		States: lifecycle.NewStates(), CreatedAt: now, UpdatedAt: now, Version: 1,
		// The tool contract and the workspace boundary, checked before any
		// permission decision; an invalid call is still recorded (not_started,
		// invalid_arguments, the details) so the model can correct it.
		Invalid: s.checkArguments(req.Tool, req.Arguments),
		// When the revision its machine starts on is already fixed, it is
		// recorded now: the start then writes nothing (startRecordedOn).
		Revision: s.submitRevision(exe),
	}
	// One transaction: the key's claim, the action and its
	// "action.submitted" event exist together or not at all.
	var writes []store.Write
	if claim != nil {
		writes = append(writes, store.PutOnceWrite(*claim))
	}
	writes = append(writes, store.PutOnceWrite(s.actionItem(a)))
	ev, w := s.eventWrite(Event{Type: "action.submitted", SessionID: a.SessionID, ExecutionID: a.ExecutionID, ActionID: a.ActionID},
		map[string]any{"tool": a.Tool, "tool_call_id": a.ToolCallID, "args_digest": a.ArgsDigest, "states": a.States})
	writes = append(writes, w)
	seqs, err := s.cfg.Store.Transact(ctx, writes)
	if err != nil {
		var (
			te *store.TransactError
			ce *store.ConflictError
		)
		if !errors.As(err, &te) || !errors.As(err, &ce) {
			return Action{}, false, fmt.Errorf("prepare action %s: %w", actionID, err)
		}
		if claim != nil && te.Index == 0 {
			// A concurrent request with the same key claimed it first; its
			// action was written with its claim.
			prev, derr := decode[idempotencyRecord](ce.Existing, "idempotency key")
			if derr != nil {
				return Action{}, false, derr
			}
			if prev.RequestDigest != reqDigest {
				return Action{}, false, keyReused(prev.ActionID)
			}
			existing, err := s.getAction(ctx, prev.ActionID)
			if err != nil {
				return Action{}, false, err
			}
			return s.resubmit(ctx, existing, reqDigest)
		}
		existing, derr := decodeAction(ce.Existing)
		if derr != nil {
			return Action{}, false, derr
		}
		return s.resubmit(ctx, existing, reqDigest)
	}
	s.logged(ev, seqs[len(seqs)-1])
	return a, true, s.start(ctx, a)
}

func (s *Service) resubmit(ctx context.Context, existing Action, reqDigest string) (Action, bool, error) {
	if existing.RequestDigest != reqDigest {
		return existing, false, keyReused(existing.ActionID)
	}
	// Starting again is idempotent; it also heals a crash between the put and the start.
	return existing, false, s.start(ctx, existing)
}

func (s *Service) start(ctx context.Context, a Action) error {
	in := encode(StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID})
	if s.cfg.Revisions != nil {
		if err := s.startOnRevision(ctx, a, in); err != nil {
			return fmt.Errorf("start state machine for %s: %w", a.ActionID, err)
		}
		return nil
	}
	if s.cfg.Starter == nil {
		return errors.New("actionflow: no Starter configured")
	}
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
	if r.IterationLimit < 0 || r.IterationLimit > MaxIterationLimit {
		return &ValidationError{Field: "iteration_limit", Msg: fmt.Sprintf("must be 1..%d (or absent: no limit)", MaxIterationLimit)}
	}
	if err := ValidateTitle(r.Title); err != nil {
		return err
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

// idempotencyItem binds (session, key) to actionID. Action ids stay
// time-ordered ULIDs (they cluster in the store's indexes); only this one
// small item per submission is keyed by the caller's key.
func idempotencyItem(session ids.SessionID, key string, actionID ids.ActionID, reqDigest string) store.Item {
	sum := sha256.Sum256([]byte(key))
	return store.Item{PK: sessionPK(session), SK: fmt.Sprintf("IDEMP#%x", sum[:16]), Version: 1,
		Body: encode(idempotencyRecord{ActionID: actionID, RequestDigest: reqDigest})}
}

// boundKey reads the action id a key is already bound to. A key bound to
// another request is a conflict.
func (s *Service) boundKey(ctx context.Context, key store.Key, reqDigest string) (ids.ActionID, bool, error) {
	it, err := s.cfg.Store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read idempotency key: %w", err)
	}
	prev, err := decode[idempotencyRecord](it, "idempotency key")
	if err != nil {
		return "", false, err
	}
	if prev.RequestDigest != reqDigest {
		return "", false, keyReused(prev.ActionID)
	}
	return prev.ActionID, true, nil
}

func keyReused(action ids.ActionID) error {
	return &ConflictError{Code: "idempotency_key_reused",
		Msg: "the idempotency key was used for a different request (action " + string(action) + ")"}
}

func requestDigest(r SubmitRequest) (string, error) {
	fields := map[string]any{
		"tool": r.Tool, "arguments": r.Arguments, "tool_call_id": r.ToolCallID,
		"execution_id": r.ExecutionID, "interactive": r.Interactive,
	}
	if r.IterationLimit != 0 {
		fields["iteration_limit"] = r.IterationLimit
	}
	if r.Title != "" {
		fields["title"] = r.Title
	}
	body, err := json.Marshal(fields)
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

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}
