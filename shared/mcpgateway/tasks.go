package mcpgateway

// MCP Tasks (protocol revision 2025-11-25, experimental), which go-sdk
// v1.8.0 does not implement: its request check refuses tasks/* before any
// receiving middleware runs and its call params drop the "task" field. So
// they are served here, at the HTTP layer, in stateful mode only (the
// Lambda's stateless gateway does not advertise them). A task is the
// action: its id is the action id, durable across serve restarts, and
// its state is read from the lifecycle's records on every request.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// tasksCapability is added to the initialize result.
var tasksCapability = map[string]any{"cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// tasks serves task-augmented tools/call and tasks/get, tasks/result,
// tasks/cancel, and advertises them in the initialize result.
func (g *Gateway) tasks(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		r.Body.Close()
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m rpcMessage
		if json.Unmarshal(bytes.TrimSpace(body), &m) != nil || len(m.ID) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		p, _ := auth.PrincipalFrom(r.Context())
		switch m.Method {
		case "initialize":
			g.advertiseTasks(w, r, next)
		case "tools/call":
			var params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
				Task      json.RawMessage `json:"task"`
				Meta      map[string]any  `json:"_meta"`
			}
			if json.Unmarshal(m.Params, &params) != nil || len(params.Task) == 0 || string(params.Task) == "null" {
				next.ServeHTTP(w, r)
				return
			}
			key, _ := params.Meta[MetaIdempotencyKey].(string)
			g.createTask(w, r, m, p, params.Name, params.Arguments, key)
		case "tasks/get", "tasks/result", "tasks/cancel":
			var params struct {
				TaskID string `json:"taskId"`
			}
			_ = json.Unmarshal(m.Params, &params)
			g.serveTask(w, r, m, p, ids.ActionID(params.TaskID))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// createTask submits the call and answers at once with its task.
func (g *Gateway) createTask(w http.ResponseWriter, r *http.Request, m rpcMessage, p actionflow.Principal, tool string, args json.RawMessage, key string) {
	if err := auth.Authorize(p, auth.CapSubmit, p.Session); err != nil {
		writeRPC(w, m.ID, errorResult(nil, "This token may not submit tool calls: "+err.Error()), nil)
		return
	}
	id := identifyCall(p, r.Header.Get("Mcp-Session-Id"), string(m.ID), key)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	a, _, err := g.svc.Submit(r.Context(), actionflow.SubmitRequest{SessionID: p.Session, ExecutionID: id.execution,
		ToolCallID: id.toolCallID, Tool: tool, Arguments: args, Interactive: true, IdempotencyKey: id.key, Principal: p})
	if err != nil {
		res, perr := g.submitFailed(r.Context(), a, err)
		if perr != nil {
			writeRPC(w, m.ID, nil, &rpcError{Code: -32603, Message: perr.Error()})
			return
		}
		writeRPC(w, m.ID, res, nil)
		return
	}
	t, err := g.task(r.Context(), a.ActionID)
	if err != nil {
		writeRPC(w, m.ID, nil, &rpcError{Code: -32603, Message: err.Error()})
		return
	}
	writeRPC(w, m.ID, map[string]any{"task": t}, nil)
}

// serveTask answers tasks/get, tasks/result and tasks/cancel for a task of
// the caller's own session; any other id is "not found", exactly like an
// id that does not exist.
func (g *Gateway) serveTask(w http.ResponseWriter, r *http.Request, m rpcMessage, p actionflow.Principal, id ids.ActionID) {
	notFound := &rpcError{Code: -32602, Message: "task " + string(id) + " not found"}
	if id == "" || ids.Validate("taskId", string(id)) != nil {
		writeRPC(w, m.ID, nil, notFound)
		return
	}
	a, err := g.svc.GetAction(r.Context(), id)
	if err != nil || a.SessionID != p.Session {
		writeRPC(w, m.ID, nil, notFound)
		return
	}
	switch m.Method {
	case "tasks/cancel":
		if _, err := g.svc.CancelAction(r.Context(), id, "the MCP client cancelled the task"); err != nil {
			writeRPC(w, m.ID, nil, &rpcError{Code: -32603, Message: err.Error()})
			return
		}
	case "tasks/result":
		res, err := g.waitReceipt(r.Context(), id)
		if err != nil {
			writeRPC(w, m.ID, nil, &rpcError{Code: -32603, Message: err.Error()})
			return
		}
		writeRPC(w, m.ID, res, nil)
		return
	}
	t, err := g.task(r.Context(), id)
	if err != nil {
		writeRPC(w, m.ID, nil, &rpcError{Code: -32603, Message: err.Error()})
		return
	}
	writeRPC(w, m.ID, t, nil)
}

// task is the action as a task: working, input_required while a human's
// approval is pending, completed (succeeded), failed (failed, unknown,
// not started), cancelled (closed by a cancellation before it started).
func (g *Gateway) task(ctx context.Context, id ids.ActionID) (map[string]any, error) {
	done, _, status, err := g.check(ctx, id)
	if err != nil {
		return nil, err
	}
	a, err := g.svc.GetAction(ctx, id)
	if err != nil {
		return nil, err
	}
	state := "working"
	if done {
		rc, err := g.svc.GetReceipt(ctx, id)
		if err != nil {
			return nil, err
		}
		switch {
		case rc.Outcome == lifecycle.OutcomeSucceeded:
			state = "completed"
		case rc.Outcome == lifecycle.OutcomeNotStarted && a.Closed != nil:
			state = "cancelled"
		default:
			state = "failed"
		}
		status = "outcome " + string(rc.Outcome)
	} else if strings.HasPrefix(status, "waiting for a human") {
		state = "input_required"
	}
	return map[string]any{"taskId": string(id), "status": state, "statusMessage": status,
		"createdAt": a.CreatedAt.UTC().Format(time.RFC3339Nano), "lastUpdatedAt": a.UpdatedAt.UTC().Format(time.RFC3339Nano),
		"ttl": nil, "pollInterval": 1000}, nil
}

// waitReceipt blocks until the action's receipt and returns its result.
func (g *Gateway) waitReceipt(ctx context.Context, id ids.ActionID) (any, error) {
	var events <-chan actionflow.Event
	if g.cfg.Wake != nil {
		ch, unsubscribe := g.cfg.Wake.Subscribe(func(ev actionflow.Event) bool { return ev.ActionID == id })
		defer unsubscribe()
		events = ch
	}
	poll := time.NewTicker(g.cfg.PollInterval)
	defer poll.Stop()
	for {
		done, res, _, err := g.check(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if done {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-events:
		case <-poll.C:
		}
	}
}

// advertiseTasks serves initialize and adds the tasks capability to its
// result (the SDK's capabilities have no field for it).
func (g *Gateway) advertiseTasks(w http.ResponseWriter, r *http.Request, next http.Handler) {
	rec := &bufferedWriter{header: http.Header{}}
	next.ServeHTTP(rec, r)
	out := rec.body.Bytes()
	if rec.status == 0 || rec.status == http.StatusOK {
		out = rewriteMessages(out, func(msg map[string]any) {
			res, _ := msg["result"].(map[string]any)
			if caps, ok := res["capabilities"].(map[string]any); ok {
				caps["tasks"] = tasksCapability
			}
		})
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	if rec.status != 0 {
		w.WriteHeader(rec.status)
	}
	w.Write(out)
}

// rewriteMessages edits the JSON-RPC messages of a JSON or SSE body.
func rewriteMessages(body []byte, edit func(map[string]any)) []byte {
	one := func(b []byte) []byte {
		var msg map[string]any
		if json.Unmarshal(b, &msg) != nil {
			return b
		}
		edit(msg)
		nb, err := json.Marshal(msg)
		if err != nil {
			return b
		}
		return nb
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return one(trimmed)
	}
	lines := bytes.Split(body, []byte("\n"))
	for i, l := range lines {
		if rest, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			lines[i] = append([]byte("data: "), one(rest)...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }
func (b *bufferedWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferedWriter) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedWriter) Flush()                      {}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, rerr *rpcError) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = result
	}
	b, _ := json.Marshal(msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}
