package mcpgateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// MetaIdempotencyKey is the tools/call _meta field by which a client names
// a call itself: the same key in the same lifecycle session is the same
// call, from any MCP session or none (the stateless transport).
const MetaIdempotencyKey = "openprogram/idempotency_key"

// cancelReason is recorded on an action whose MCP request was cancelled.
const cancelReason = "the MCP client cancelled the tool call"

// callIdentity is how one tools/call is named in the lifecycle.
type callIdentity struct {
	toolCallID ids.ToolCallID
	key        string // the submission's idempotency key
	execution  ids.ExecutionID
	// durable: a retry of the request reaches the same action (false only
	// for a stateless request without MetaIdempotencyKey).
	durable bool
}

// identify derives the call's tool_call_id and idempotency key:
//   - the client's MetaIdempotencyKey, if it sent one;
//   - else the MCP session id and the JSON-RPC request id, so a retry of
//     the same request on the same MCP session never runs a tool twice;
//   - else (stateless, no session to scope a request id, which clients
//     restart at 0 or 1) a fresh id: every such request is a new call.
//
// Both are hashed with the lifecycle session, so one session's ids never
// reach another's. The calls of one MCP session form one execution.
func identify(req *mcp.CallToolRequest, p actionflow.Principal) callIdentity {
	reqID := ""
	if req.Extra != nil {
		reqID = req.Extra.Header.Get(requestIDHeader)
	}
	key, _ := req.Params.Meta[MetaIdempotencyKey].(string)
	return identifyCall(p, req.Session.ID(), reqID, key)
}

// identifyCall is identify from its parts (also used by tasks.go).
func identifyCall(p actionflow.Principal, mcpSession, reqID, key string) callIdentity {
	var scope string
	var out callIdentity
	if key != "" {
		k := key
		scope, out.durable = "key\x00"+k, true
	} else if mcpSession != "" && reqID != "" {
		scope, out.durable = "request\x00"+mcpSession+"\x00"+reqID, true
	} else {
		scope = "fresh\x00" + ids.New("call")
	}
	sum := sha256.Sum256([]byte(string(p.Session) + "\x00" + scope))
	digest := hex.EncodeToString(sum[:])[:40]
	out.toolCallID = ids.ToolCallID("mcp_" + digest)
	out.key = "mcp." + digest
	if mcpSession != "" {
		es := sha256.Sum256([]byte(string(p.Session) + "\x00" + mcpSession))
		out.execution = ids.ExecutionID("exe_mcp_" + hex.EncodeToString(es[:])[:32])
	}
	return out
}

// call runs one tools/call as one action, through the same Submit as
// POST /v1/sessions/{id}/actions, and holds the request until the action's
// receipt is sealed (or the client cancels). Every answer the model should
// read, refusals included, is a tool result (isError); a protocol error
// only means the request itself could not be served.
func (g *Gateway) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, ok := principalOf(req)
	if !ok {
		return nil, errors.New("mcp: the request carries no authenticated principal")
	}
	if err := auth.Authorize(p, auth.CapSubmit, p.Session); err != nil {
		return errorResult(nil, "This token may not submit tool calls: "+err.Error()), nil
	}
	if k, ok := g.cfg.Tools.(toolKnower); ok && !k.Knows(req.Params.Name) {
		// Not in the catalog at all (a hidden tool still goes to the
		// lifecycle, whose refusal names the rule): nothing to decide, no
		// person to wait for.
		return errorResult(nil, fmt.Sprintf("Unknown tool %q: this server has no such tool (tools/list names the tools you may call). Nothing ran.", req.Params.Name)), nil
	}
	id := identify(req, p)
	ctx, release := g.hold(ctx, req.Session.ID(), p)
	defer release()
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	a, _, err := g.svc.Submit(ctx, actionflow.SubmitRequest{SessionID: p.Session, ExecutionID: id.execution,
		ToolCallID: id.toolCallID, Tool: req.Params.Name, Arguments: args, Interactive: true,
		IdempotencyKey: id.key, Principal: p})
	if err != nil {
		return g.submitFailed(ctx, a, err)
	}
	return g.await(ctx, req, a, id)
}

// submitFailed answers a submission the lifecycle did not take.
func (g *Gateway) submitFailed(ctx context.Context, a actionflow.Action, err error) (*mcp.CallToolResult, error) {
	var ve *actionflow.ValidationError
	var ce *actionflow.ConflictError
	var nf *actionflow.NotFoundError
	switch {
	case errors.As(err, &ve):
		return errorResult(nil, fmt.Sprintf("The call was not accepted: %s: %s. Nothing ran; correct it and call again.", ve.Field, ve.Msg)), nil
	case errors.As(err, &ce):
		return errorResult(nil, fmt.Sprintf("The call was not accepted (%s): %s. Nothing ran.", ce.Code, ce.Msg)), nil
	case errors.As(err, &nf):
		return errorResult(nil, "The call was not accepted: "+nf.Error()+". Nothing ran."), nil
	case a.ActionID != "":
		// Durable but not started: the same request again starts it.
		g.log.ErrorContext(ctx, "mcp: action prepared, start failed", "action_id", a.ActionID, "error", err)
		return errorResult(&a, fmt.Sprintf("The action %s is saved but did not start; nothing ran. Send the same request again to start it.", a.ActionID)), nil
	}
	return nil, fmt.Errorf("submit tool call: %w", err)
}

// await holds the call until the action's receipt is sealed. While a human
// decides, a client that gave a progressToken hears where it waits. The
// client's cancellation cancels the action (a pending approval becomes
// cancelled and nothing runs; an action that already started finishes and
// keeps its receipt).
func (g *Gateway) await(ctx context.Context, req *mcp.CallToolRequest, a actionflow.Action, id callIdentity) (*mcp.CallToolResult, error) {
	var events <-chan actionflow.Event
	if g.cfg.Wake != nil {
		ch, unsubscribe := g.cfg.Wake.Subscribe(func(ev actionflow.Event) bool { return ev.ActionID == a.ActionID })
		defer unsubscribe()
		events = ch
	}
	var hold <-chan time.Time
	if g.cfg.MaxHold > 0 {
		t := time.NewTimer(g.cfg.MaxHold)
		defer t.Stop()
		hold = t.C
	}
	poll := time.NewTicker(g.cfg.PollInterval)
	defer poll.Stop()
	progress := newProgress(req, g.cfg.ProgressInterval)
	for {
		done, res, status, err := g.check(ctx, a.ActionID)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if done {
			return res, nil
		}
		progress.send(ctx, status)
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), errGatewayStopping) {
				return errorResult(&a, fmt.Sprintf("The lifecycle server is stopping; action %s was not cancelled and continues after it restarts "+
					"(its result will be in its receipt). Send the same request again after the restart to wait for it.", a.ActionID)), nil
			}
			return nil, g.abandon(a.ActionID, ctx.Err())
		case <-hold:
			return g.heldTooLong(a.ActionID, id)
		case <-events:
		case <-poll.C:
		}
	}
}

// check reads the action once: its result when the receipt is sealed,
// otherwise a line saying what it waits for.
func (g *Gateway) check(ctx context.Context, id ids.ActionID) (done bool, res *mcp.CallToolResult, status string, err error) {
	// The receipt first: an action read after it carries the decision
	// the receipt was sealed from.
	rc, rerr := g.svc.GetReceipt(ctx, id)
	if rerr != nil && !errors.Is(rerr, store.ErrNotFound) {
		return false, nil, "", fmt.Errorf("read receipt %s: %w", id, rerr)
	}
	a, err := g.svc.GetAction(ctx, id)
	if err != nil {
		return false, nil, "", fmt.Errorf("read action %s: %w", id, err)
	}
	if rerr == nil {
		return true, receiptResult(a, rc), "", nil
	}
	status = "action " + string(id) + " is being decided"
	switch {
	case a.States.Started:
		status = "action " + string(id) + " is running"
	case a.States.Permission == lifecycle.PermissionAllow:
		status = "action " + string(id) + " is allowed and starting"
	case a.States.Permission == lifecycle.PermissionAsk:
		ap, err := g.svc.GetApproval(ctx, id)
		if err == nil && ap.Status == actionflow.ApprovalPending {
			status = fmt.Sprintf("waiting for a human to approve or decline %s (approval %s, in the Activity UI or POST /v1/approvals/%s; expires %s)",
				a.Tool, ap.ApprovalID, ap.ApprovalID, ap.ExpiresAt.UTC().Format(time.RFC3339))
		}
	}
	return false, nil, status, nil
}

// errGatewayStopping ends held calls when the gateway stops; their
// actions are left as they are (durable, they continue after a restart).
var errGatewayStopping = errors.New("the MCP gateway is stopping")

// errSessionClosed ends the held calls of an MCP session its client closed.
var errSessionClosed = errors.New("the MCP client closed its session")

// heldCall is a tools/call waiting for its action's outcome.
type heldCall struct {
	user   string
	cancel context.CancelCauseFunc
}

// hold registers a held call of an MCP session, so that the client's
// closing of the session (DELETE) or the gateway's stop can end it: the
// SDK's session close waits for running handlers without cancelling them.
func (g *Gateway) hold(ctx context.Context, mcpSession string, p actionflow.Principal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	h := &heldCall{user: userID(p), cancel: cancel}
	g.heldMu.Lock()
	if g.stopping {
		g.heldMu.Unlock()
		cancel(errGatewayStopping)
		return ctx, func() {}
	}
	if g.held[mcpSession] == nil {
		g.held[mcpSession] = map[*heldCall]bool{}
	}
	g.held[mcpSession][h] = true
	g.heldMu.Unlock()
	return ctx, func() {
		g.heldMu.Lock()
		delete(g.held[mcpSession], h)
		if len(g.held[mcpSession]) == 0 {
			delete(g.held, mcpSession)
		}
		g.heldMu.Unlock()
		cancel(nil)
	}
}

// endHeld cancels the held calls of one MCP session (only its own user's)
// or, with mcpSession "", of every session.
func (g *Gateway) endHeld(mcpSession, user string, cause error) {
	g.heldMu.Lock()
	defer g.heldMu.Unlock()
	for sid, calls := range g.held {
		if mcpSession != "" && sid != mcpSession {
			continue
		}
		for h := range calls {
			if user == "" || h.user == user {
				h.cancel(cause)
			}
		}
	}
}

// abandon cancels the action of a request the client cancelled (or whose
// session it closed): a pending approval becomes cancelled, nothing runs.
func (g *Gateway) abandon(id ids.ActionID, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	started, err := g.svc.CancelAction(ctx, id, cancelReason)
	switch {
	case err != nil:
		g.log.Error("mcp: cancelled call's action not cancelled", "action_id", id, "error", err)
	case started:
		g.log.Info("mcp: cancelled call's action had already started; it finishes and keeps its receipt", "action_id", id)
	default:
		g.log.Info("mcp: cancelled call's action closed before it started", "action_id", id)
	}
	return cause
}

// heldTooLong answers a call still open after MaxHold (the stateless
// transport, where API Gateway ends the request at 30 s). A call the
// client can come back to (MetaIdempotencyKey) stays pending; any other
// is cancelled, so nothing runs that no one will hear about.
func (g *Gateway) heldTooLong(id ids.ActionID, ident callIdentity) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := g.svc.GetAction(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read action %s: %w", id, err)
	}
	if ident.durable {
		return errorResult(&a, fmt.Sprintf("Action %s is still waiting (for a human's approval, or to finish) after %s; it was not cancelled. "+
			"Call again with the same %s to wait for its result.", id, g.cfg.MaxHold, MetaIdempotencyKey)), nil
	}
	started, err := g.svc.CancelAction(ctx, id, "the MCP request could not wait longer than "+g.cfg.MaxHold.String())
	if err != nil {
		return nil, fmt.Errorf("cancel action %s: %w", id, err)
	}
	if started {
		return errorResult(&a, fmt.Sprintf("Action %s started but did not finish within %s; its outcome will be in its receipt (GET /v1/actions/%s). Do not assume it succeeded or failed.", id, g.cfg.MaxHold, id)), nil
	}
	return errorResult(&a, fmt.Sprintf("Action %s waited %s for a human's decision and was withdrawn; nothing ran. "+
		"To wait longer, send the call with _meta %q (or as a task).", id, g.cfg.MaxHold, MetaIdempotencyKey)), nil
}

// progress sends notifications/progress to a client that asked for them.
type progress struct {
	req      *mcp.CallToolRequest
	token    any
	every    time.Duration
	n        float64
	last     string
	lastSent time.Time
}

func newProgress(req *mcp.CallToolRequest, every time.Duration) *progress {
	return &progress{req: req, token: req.Params.GetProgressToken(), every: every}
}

// send reports status when it changed or every interval.
func (p *progress) send(ctx context.Context, status string) {
	if p.token == nil || status == "" || p.req.Session == nil {
		return
	}
	if status == p.last && time.Since(p.lastSent) < p.every {
		return
	}
	p.n++
	p.last, p.lastSent = status, time.Now()
	// A lost notification is only a missed update; the call goes on.
	_ = p.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: status})
}

// toolKnower is a tool lister that can say whether its catalog has a tool
// at all (httpapi.PermissionTools).
type toolKnower interface {
	Knows(tool string) bool
}
