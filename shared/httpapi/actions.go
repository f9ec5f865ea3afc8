package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// IdempotencyHeader names the submission's idempotency key.
const IdempotencyHeader = "Idempotency-Key"

// SubmitBody is the body of POST /v1/sessions/{session_id}/actions.
type SubmitBody struct {
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	ToolCallID  ids.ToolCallID  `json:"tool_call_id"`
	ExecutionID ids.ExecutionID `json:"execution_id,omitempty"`
	Interactive *bool           `json:"interactive"`
	// IterationLimit bounds the tool calls of the execution this call
	// starts (1..1000; absent: no limit).
	IterationLimit int `json:"iteration_limit,omitempty"`
	// Title is the short human title of the execution this call starts
	// (Activity's branch heading; at most 120 characters, one plain line).
	Title string `json:"title,omitempty"`
}

func (h *api) submit(w http.ResponseWriter, r *http.Request, c *call) error {
	key := strings.TrimSpace(r.Header.Get(IdempotencyHeader))
	if key == "" {
		return badRequest("missing_field", IdempotencyHeader, "send an Idempotency-Key header (the same key retries the same submission)")
	}
	var b SubmitBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	switch {
	case b.Tool == "":
		return badRequest("missing_field", "tool", "tool is required")
	case len(b.Arguments) == 0 || string(b.Arguments) == "null":
		return badRequest("missing_field", "arguments", "arguments is required (a JSON object)")
	case b.Arguments[0] != '{':
		return badRequest("wrong_type", "arguments", "arguments must be a JSON object")
	case b.ToolCallID == "":
		return badRequest("missing_field", "tool_call_id", "tool_call_id is required")
	case b.Interactive == nil:
		return badRequest("missing_field", "interactive", "interactive is required (true when an owner can answer approvals)")
	}
	if b.ExecutionID != "" {
		// Continuing an execution of another session is refused before anything is written.
		e, err := h.svc.GetExecution(r.Context(), b.ExecutionID)
		if err == nil && e.SessionID != c.t.Session {
			return &actionflow.NotFoundError{What: "execution " + string(b.ExecutionID)}
		}
		if err != nil && !isNotFound(err) {
			return err
		}
	}
	a, created, err := h.svc.Submit(r.Context(), actionflow.SubmitRequest{SessionID: c.t.Session, ExecutionID: b.ExecutionID,
		ToolCallID: b.ToolCallID, Tool: b.Tool, Arguments: b.Arguments, Interactive: *b.Interactive, IdempotencyKey: key, Principal: c.p,
		IterationLimit: b.IterationLimit, Title: b.Title})
	if err != nil {
		if a.ActionID == "" || isTyped(err) {
			return err
		}
		// The action is durable but its state machine did not start: the
		// same Idempotency-Key retries the start.
		h.log.ErrorContext(r.Context(), "api: action prepared, start failed", "action_id", a.ActionID, "error", err)
		return &requestError{Status: http.StatusServiceUnavailable, Code: "start_failed",
			Msg: "the action " + string(a.ActionID) + " is saved but did not start; retry with the same Idempotency-Key"}
	}
	if !created {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	v, err := h.view(r.Context(), a)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/actions/"+string(a.ActionID))
	writeJSON(w, http.StatusAccepted, v)
	return nil
}

// isTyped reports whether err is one the API maps to a client status.
func isTyped(err error) bool {
	status, _ := statusOf(err)
	return status < 500
}

func (h *api) view(ctx context.Context, a actionflow.Action) (ActionView, error) {
	var apPtr *actionflow.Approval
	ap, err := h.svc.GetApproval(ctx, a.ActionID)
	switch {
	case err == nil:
		apPtr = &ap
	case !errors.Is(err, store.ErrNotFound):
		return ActionView{}, err
	}
	var rcPtr *actionflow.Receipt
	rc, err := h.svc.GetReceipt(ctx, a.ActionID)
	switch {
	case err == nil:
		rcPtr = &rc
	case !errors.Is(err, store.ErrNotFound):
		return ActionView{}, err
	}
	v := actionView(a, apPtr, rcPtr)
	v.Links = h.links(a.ActionID)
	if a.States.Reconciled {
		rec, err := h.svc.GetReconciliation(ctx, a.ActionID)
		if err != nil {
			return ActionView{}, err
		}
		v.Reconciliation = &rec
	}
	return v, nil
}

// getAction answers the action; with ?wait= it long-polls until the outcome
// is known (a receipt is sealed) or the wait ends.
func (h *api) getAction(w http.ResponseWriter, r *http.Request, c *call) error {
	wait, _, err := waitParam(r, h.cfg.MaxWait)
	if err != nil {
		return err
	}
	id := c.t.Action.ActionID
	var v ActionView
	err = h.waitFor(r.Context(), wait, func(ev actionflow.Event) bool { return ev.ActionID == id }, func() (bool, error) {
		a, err := h.svc.GetAction(r.Context(), id)
		if err != nil {
			return false, err
		}
		if v, err = h.view(r.Context(), a); err != nil {
			return false, err
		}
		return v.Receipt != nil || v.States.Outcome != "", nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
