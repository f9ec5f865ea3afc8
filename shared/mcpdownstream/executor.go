package mcpdownstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

var (
	_ actionflow.Executor = (*Pool)(nil)
	_ actionflow.Readier  = (*Pool)(nil)
)

// MetaIdempotencyKey is the _meta key of tools/call that carries the
// action id, so a downstream server that deduplicates can.
const MetaIdempotencyKey = "openprogram.dev/idempotency_key"

// NotReachableError: the server could not be reached (started, connected,
// pinged) before anything was sent.
type NotReachableError struct {
	Server string
	Err    error
}

func (e *NotReachableError) Error() string {
	return fmt.Sprintf("MCP server %q not reachable, nothing was sent: %v", e.Server, e.Err)
}
func (e *NotReachableError) Unwrap() error { return e.Err }

func (p *Pool) server(tool string) (*server, string, error) {
	name, t, ok := SplitToolName(tool)
	if !ok {
		return nil, "", fmt.Errorf("%q is not an MCP tool name (mcp__<server>__<tool>)", tool)
	}
	s := p.servers[name]
	if s == nil {
		return nil, "", fmt.Errorf("no MCP server %q is configured", name)
	}
	return s, t, nil
}

func ended(ch chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Ready makes sure the tool's server can take a call now, before dispatch
// writes start evidence: a live session answers a ping; a dead one (its
// process exited, its connection closed, a ping unanswered) is replaced by
// a new connection (a stdio server is started again). An error means
// nothing was sent: dispatch fails NotStarted, which is safe to retry.
func (p *Pool) Ready(ctx context.Context, tool string) error {
	s, _, err := p.server(tool)
	if err != nil {
		return err
	}
	s.mu.Lock()
	sess, done := s.session, s.ended
	s.mu.Unlock()
	if sess != nil && !ended(done) {
		pctx, cancel := context.WithTimeout(ctx, p.opts.PingTimeout)
		err := sess.Ping(pctx, nil)
		timedOut := errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		if timedOut && !ended(done) && s.inflight.Load() > 0 {
			// No answer in time, connection open, calls running: busy, not
			// dead; its running calls keep their session. (A closed
			// connection is dead whatever runs on it.)
			return &NotReachableError{Server: s.name, Err: fmt.Errorf("no answer to a ping while %d call(s) run: %w", s.inflight.Load(), err)}
		}
		p.log.Warn("MCP server did not answer a ping; connecting again", "mcp_server", s.name, "error", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != sess && s.session != nil && !ended(s.ended) {
		return nil // another call reconnected meanwhile
	}
	cctx, cancel := context.WithTimeout(ctx, p.opts.ConnectTimeout)
	defer cancel()
	if _, err := p.connectLocked(cctx, s); err != nil {
		return &NotReachableError{Server: s.name, Err: err}
	}
	p.log.Info("MCP server connected again", "mcp_server", s.name)
	return nil
}

// Execute calls the downstream tool once, within the server's call
// timeout. Start evidence is durable before it runs, so:
//
//   - a result with isError is a failed outcome carrying the tool's text;
//   - a JSON-RPC refusal of the request itself (parse error, invalid
//     request, unknown method, invalid params: the tool did not run) is
//     failed;
//   - anything else without a result (timeout, connection lost, the
//     server's internal error) is an error: outcome unknown, which needs a
//     person's reconciliation and is never retried.
func (p *Pool) Execute(ctx context.Context, t actionflow.Task) (actionflow.ToolResult, error) {
	s, tool, err := p.server(t.Tool)
	if err != nil {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "mcp_no_server", Error: err.Error()}, nil
	}
	s.mu.Lock()
	sess, done := s.session, s.ended
	s.mu.Unlock()
	if sess == nil || ended(done) {
		return actionflow.ToolResult{}, fmt.Errorf("MCP server %q: the session ended between the readiness check and the call; "+
			"the call was not sent (outcome recorded unknown because start evidence exists)", s.name)
	}
	args := json.RawMessage(t.Arguments)
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	timeout := s.cfg.CallTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	res, err := sess.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args,
		Meta: mcp.Meta{MetaIdempotencyKey: t.IdempotencyKey}})
	if err != nil {
		return p.classify(s.name, tool, err, cctx.Err(), timeout)
	}
	out := renderContent(res)
	if res.IsError {
		msg := out
		if len(msg) > 1000 {
			cut := 1000
			for cut > 0 && !utf8.RuneStart(msg[cut]) {
				cut--
			}
			msg = msg[:cut] + "..."
		}
		if msg == "" {
			msg = "the tool reported an error without text"
		}
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "tool_error", Error: msg, Output: out}, nil
	}
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: out}, nil
}

// refusals are JSON-RPC errors that say the server refused the request
// before running anything.
var refusals = map[int64]string{
	jsonrpc.CodeParseError:     "mcp_parse_error",
	jsonrpc.CodeInvalidRequest: "mcp_invalid_request",
	jsonrpc.CodeMethodNotFound: "mcp_method_not_found",
	jsonrpc.CodeInvalidParams:  "mcp_invalid_params",
}

func (p *Pool) classify(server, tool string, err, ctxErr error, timeout time.Duration) (actionflow.ToolResult, error) {
	var werr *jsonrpc.Error
	switch {
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.ErrClosedPipe), errors.Is(err, net.ErrClosed):
		return actionflow.ToolResult{}, fmt.Errorf("MCP server %q, tool %q: the connection closed before a response; the call may have run: %w", server, tool, err)
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return actionflow.ToolResult{}, fmt.Errorf("MCP server %q, tool %q: no response within %s; the call may have run", server, tool, timeout)
	case ctxErr != nil:
		return actionflow.ToolResult{}, fmt.Errorf("MCP server %q, tool %q: the call was abandoned (%v) before a response; it may have run", server, tool, ctxErr)
	case errors.As(err, &werr) && refusals[werr.Code] != "":
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: refusals[werr.Code],
			Error: fmt.Sprintf("MCP server %q refused the call of %q: %s", server, tool, werr.Message)}, nil
	}
	return actionflow.ToolResult{}, fmt.Errorf("MCP server %q, tool %q: no result (%v); the call may have run", server, tool, err)
}

// renderContent is the tool's content as text: text blocks as they are,
// other blocks (images, resources) as their JSON, one per line; with no
// content, the structured content's JSON.
func renderContent(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			b = []byte(fmt.Sprintf("%q", fmt.Sprintf("unrenderable %T content", c)))
		}
		parts = append(parts, string(b))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}
