package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Path is where the gateway is mounted, beside /v1.
const Path = "/mcp"

// Defaults of Config.
const (
	DefaultPollInterval     = time.Second
	DefaultRefreshInterval  = 5 * time.Second
	DefaultProgressInterval = 5 * time.Second
	DefaultSessionTimeout   = time.Hour
	// DefaultStatelessHold bounds how long a stateless request (the Lambda
	// behind API Gateway, whose integration times out at 30 s) holds a call
	// that waits for a human.
	DefaultStatelessHold = 25 * time.Second
)

// Subscriber wakes waiters when events are appended (*eventbus.Bus fed by
// actionflow.Config.Notify). Everything works without it, by polling.
type Subscriber interface {
	Subscribe(filter func(actionflow.Event) bool) (<-chan actionflow.Event, func())
}

// Config wires the gateway. Service, Auth and Tools are required.
type Config struct {
	Service *actionflow.Service
	// Auth is the API's authenticator (the same tokens as /v1).
	Auth httpapi.Authenticator
	// Tools is the API's tool lister (the catalog filtered by the live policy).
	Tools httpapi.ToolLister
	// Wake nil: waits and list refreshes poll.
	Wake   Subscriber
	Logger *slog.Logger
	// Stateless serves every POST with a temporary MCP session (the Lambda):
	// no Mcp-Session-Id, no GET stream, JSON responses, no list_changed.
	Stateless bool
	// PollInterval: how often a held call re-reads its action (default 1 s).
	PollInterval time.Duration
	// RefreshInterval: how often the tool lists of connected sessions are
	// compared with the live policy when no event says it changed (default 5 s).
	RefreshInterval time.Duration
	// ProgressInterval: how often a held call sends a progress notification
	// to a client that gave a progressToken (default 5 s).
	ProgressInterval time.Duration
	// MaxHold bounds how long a call waits for its outcome; 0: until the
	// outcome or the client's cancellation (stateless default: 25 s).
	MaxHold time.Duration
	// SessionTimeout closes MCP sessions idle this long (default 1 h).
	SessionTimeout time.Duration
	// Version is reported as the server's implementation version.
	Version string
}

// Gateway is the MCP front door: an http.Handler for Path.
type Gateway struct {
	cfg     Config
	svc     *actionflow.Service
	log     *slog.Logger
	handler http.Handler

	mu      sync.Mutex
	servers map[ids.SessionID]*sessionServer

	stop      context.CancelFunc
	stopped   chan struct{}
	closeOnce sync.Once

	heldMu   sync.Mutex
	held     map[string]map[*heldCall]bool // by MCP session id
	stopping bool
}

// New builds the gateway and starts its tool-list watcher (stopped by Close).
func New(cfg Config) (*Gateway, error) {
	switch {
	case cfg.Service == nil:
		return nil, errors.New("mcpgateway: Config.Service is required")
	case cfg.Auth == nil:
		return nil, errors.New("mcpgateway: Config.Auth is required")
	case cfg.Tools == nil:
		return nil, errors.New("mcpgateway: Config.Tools is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.MaxHold <= 0 && cfg.Stateless {
		cfg.MaxHold = DefaultStatelessHold
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	g := &Gateway{cfg: cfg, svc: cfg.Service, log: cfg.Logger, servers: map[ids.SessionID]*sessionServer{}, stopped: make(chan struct{}),
		held: map[string]map[*heldCall]bool{}}
	streamable := mcp.NewStreamableHTTPHandler(g.serverFor, &mcp.StreamableHTTPOptions{
		Stateless:      cfg.Stateless,
		JSONResponse:   cfg.Stateless, // API Gateway cannot stream a Lambda response
		Logger:         cfg.Logger,
		SessionTimeout: cfg.SessionTimeout,
	})
	// The SDK binds a session to the token's user (a request with another
	// token on the same Mcp-Session-Id is refused) and hands every request's
	// principal to the tool handler through its TokenInfo.
	bearer := mcpauth.RequireBearerToken(tokenInfo, &mcpauth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	inner := markRequests(bearer(streamable))
	if !cfg.Stateless {
		inner = g.tasks(inner)
	}
	g.handler = g.authenticate(g.sessionClose(inner))
	ctx, cancel := context.WithCancel(context.Background())
	g.stop = cancel
	go g.watch(ctx)
	return g, nil
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

// Close stops the tool-list watcher and closes every MCP session.
func (g *Gateway) Close() { g.closeOnce.Do(g.close) }

func (g *Gateway) close() {
	// Held calls end first: the SDK's session close waits for them.
	g.heldMu.Lock()
	g.stopping = true
	g.heldMu.Unlock()
	g.endHeld("", "", errGatewayStopping)
	g.drainHeld(5 * time.Second)
	g.stop()
	<-g.stopped
	g.mu.Lock()
	servers := make([]*sessionServer, 0, len(g.servers))
	for _, s := range g.servers {
		servers = append(servers, s)
	}
	g.mu.Unlock()
	for _, s := range servers {
		for ss := range s.srv.Sessions() {
			ss.Close()
		}
	}
}

// drainHeld waits (at most d) until every held call has returned its
// answer, so closing the sessions does not cut it off.
func (g *Gateway) drainHeld(d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		g.heldMu.Lock()
		n := len(g.held)
		g.heldMu.Unlock()
		if n == 0 {
			return
		}
	}
}

// principalExtra is the TokenInfo.Extra key of the authenticated principal.
const principalExtra = "openprogram.principal"

// authenticate answers a request without a valid agent token with 401
// (403 for a token of another role) exactly as /v1 does, before the MCP
// layer sees it; the principal travels on the context.
func (g *Gateway) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := g.cfg.Auth.Authenticate(r)
		if err != nil {
			msg := err.Error()
			var ue *auth.UnauthenticatedError
			if errors.As(err, &ue) {
				msg = ue.Msg
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="lifecycle"`)
			writeError(w, http.StatusUnauthorized, "unauthenticated", msg)
			return
		}
		// An MCP connection is an agent's: a human decides through the
		// UI or the API, never through the agent's client.
		if p.Role != auth.RoleAgent || p.Session == "" {
			writeError(w, http.StatusForbidden, "forbidden", "an MCP connection needs an agent token of one session (lifecycle token --role agent --session ID); this token has role "+p.Role)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

// sessionClose ends the held calls of an MCP session its client closes
// (DELETE with its Mcp-Session-Id, by the same user): their actions are
// cancelled, as if each call had been cancelled.
func (g *Gateway) sessionClose(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sid := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && sid != "" {
			if p, ok := auth.PrincipalFrom(r.Context()); ok {
				g.endHeld(sid, userID(p), errSessionClosed)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// userID is who an MCP session belongs to (the SDK refuses a session's
// requests from any other).
func userID(p actionflow.Principal) string {
	return p.Role + "|" + string(p.Session) + "|" + p.Subject
}

// tokenInfo is the SDK's view of the principal authenticate put on the
// context (the bearer token itself was verified there).
func tokenInfo(ctx context.Context, _ string, _ *http.Request) (*mcpauth.TokenInfo, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, mcpauth.ErrInvalidToken
	}
	return &mcpauth.TokenInfo{UserID: userID(p),
		Extra: map[string]any{principalExtra: p}}, nil
}

// principalOf is the principal of the HTTP request that carried req.
func principalOf(req *mcp.CallToolRequest) (actionflow.Principal, bool) {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return actionflow.Principal{}, false
	}
	p, ok := req.Extra.TokenInfo.Extra[principalExtra].(actionflow.Principal)
	return p, ok
}

// serverFor returns the MCP server of the request's session (one per
// lifecycle session: its tool list is the session's, and a policy change
// notifies every MCP session connected to it).
func (g *Gateway) serverFor(r *http.Request) *mcp.Server {
	p, ok := auth.PrincipalFrom(r.Context())
	if !ok {
		return nil
	}
	return g.sessionServer(r.Context(), p.Session).srv
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(httpapi.ErrorBody{Error: httpapi.ErrorDetail{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
