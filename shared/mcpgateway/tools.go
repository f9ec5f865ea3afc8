package mcpgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
)

// instructions tell the model how this server differs from a plain one.
const instructions = `Every tool call passes through the OpenProgram action lifecycle: it is checked against the session's live rules, ` +
	`may wait for a human's approval (the call stays open until the owner decides in the Activity UI or the API), runs once, ` +
	`and leaves a durable receipt. A refused call returns an error result saying the restriction and what would change it; ` +
	`do not retry it reworded. An unknown outcome means the operation may have run: do not assume either way.`

// sessionServer is the MCP server of one lifecycle session.
type sessionServer struct {
	g       *Gateway
	session ids.SessionID
	srv     *mcp.Server

	mu      sync.Mutex // serializes refreshes
	version string
	tools   map[string][]byte // name -> the tool as listed (JSON)
}

// sessionServer returns the session's server, creating it with the
// session's tools listed (so a first tools/list announces no change).
func (g *Gateway) sessionServer(ctx context.Context, session ids.SessionID) *sessionServer {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.servers[session]; s != nil {
		return s
	}
	s := &sessionServer{g: g, session: session, tools: map[string][]byte{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "openprogram-lifecycle", Title: "OpenProgram action lifecycle", Version: g.cfg.Version},
		&mcp.ServerOptions{
			Instructions: instructions,
			Logger:       g.log,
			// tools with listChanged even while the policy hides every tool;
			// no logging capability.
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		})
	s.srv.AddReceivingMiddleware(s.middleware)
	if err := s.refresh(ctx); err != nil {
		g.log.Warn("mcp: tool list not loaded; the first tools/list loads it", "session_id", session, "error", err)
	}
	g.servers[session] = s
	return s
}

// middleware keeps tools/list exactly the live visible tools (refreshed
// before it is answered) and sends every tools/call to the lifecycle,
// listed or not: a tool the policy hides is still submitted, so the
// model reads the lifecycle's refusal rather than a protocol error.
func (s *sessionServer) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			if err := s.refresh(ctx); err != nil {
				return nil, fmt.Errorf("list the session's tools: %w", err)
			}
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				return s.g.call(ctx, r)
			}
		}
		return next(ctx, method, req)
	}
}

// refresh makes the server's tools the session's visible tools under the
// live policy; the SDK notifies connected sessions of a change
// (notifications/tools/list_changed).
func (s *sessionServer) refresh(ctx context.Context) error {
	tl, err := s.g.cfg.Tools.VisibleTools(ctx, s.session)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make(map[string]*mcp.Tool, len(tl.Tools))
	for _, t := range tl.Tools {
		want[t.Name] = s.g.mcpTool(t)
	}
	var gone []string
	for name := range s.tools {
		if want[name] == nil {
			gone = append(gone, name)
			delete(s.tools, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	for name, t := range want {
		b, _ := json.Marshal(t)
		if old, ok := s.tools[name]; ok && bytes.Equal(old, b) {
			continue
		}
		s.tools[name] = b
		s.srv.AddTool(t, s.unreachable)
	}
	s.version = tl.PolicyVersion
	return nil
}

// unreachable is the handler the SDK requires of a tool; the middleware
// answers every tools/call before the SDK would call it.
func (s *sessionServer) unreachable(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return s.g.call(ctx, req)
}

// objectSchema is the schema of a tool whose contract names none.
var objectSchema = json.RawMessage(`{"type":"object"}`)

// mcpTool converts a catalog tool. A schema that is not a JSON object of
// type "object" (which the protocol requires) is listed as a plain
// object: the lifecycle still checks the arguments against the contract.
func (g *Gateway) mcpTool(t httpapi.Tool) *mcp.Tool {
	schema := objectSchema
	var probe struct {
		Type any `json:"type"`
	}
	if len(t.InputSchema) > 0 && json.Unmarshal(t.InputSchema, &probe) == nil && probe.Type == "object" {
		schema = t.InputSchema
	} else if len(t.InputSchema) > 0 {
		g.log.Warn("mcp: a tool's input schema is not an object schema; it is listed as {\"type\":\"object\"}", "tool", t.Name)
	}
	return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}
}

// watch refreshes the tool lists of connected sessions when a policy
// changes (the bus's policy.updated event) and every RefreshInterval (a
// policy changed by another process, or no bus).
func (g *Gateway) watch(ctx context.Context) {
	defer close(g.stopped)
	if g.cfg.Stateless {
		return // no session outlives its request: nobody to notify
	}
	var events <-chan actionflow.Event
	if g.cfg.Wake != nil {
		ch, cancel := g.cfg.Wake.Subscribe(func(ev actionflow.Event) bool { return ev.Type == "policy.updated" })
		defer cancel()
		events = ch
	}
	tick := time.NewTicker(g.cfg.RefreshInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			g.mu.Lock()
			s := g.servers[ev.SessionID]
			g.mu.Unlock()
			if s != nil {
				g.refreshConnected(ctx, s)
			}
		case <-tick.C:
			g.mu.Lock()
			all := make([]*sessionServer, 0, len(g.servers))
			for _, s := range g.servers {
				all = append(all, s)
			}
			g.mu.Unlock()
			for _, s := range all {
				g.refreshConnected(ctx, s)
			}
		}
	}
}

// refreshConnected refreshes a server that has connected sessions (one
// without any lists afresh when a session asks).
func (g *Gateway) refreshConnected(ctx context.Context, s *sessionServer) {
	connected := false
	for range s.srv.Sessions() {
		connected = true
		break
	}
	if !connected {
		return
	}
	if err := s.refresh(ctx); err != nil && ctx.Err() == nil {
		g.log.Warn("mcp: tool list not refreshed", "session_id", s.session, "error", err)
	}
}
