package mcpdownstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/permission"
)

// Kind is the executor kind of downstream MCP tools (executor.Routes maps
// mcp__<server>__* to it).
const Kind = "mcp"

// Prefix starts every downstream tool name: mcp__<server>__<tool>.
const Prefix = "mcp__"

// ToolName is the name agents and rules see for a downstream tool.
func ToolName(server, tool string) string { return Prefix + server + "__" + tool }

// SplitToolName is ToolName's inverse.
func SplitToolName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok && server != "" && tool != ""
}

// toolPart is what a permission rule can name as the tool of
// mcp__<server>__<tool> (permission.ParseRule's MCP grammar).
var toolPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// Options tune a Pool.
type Options struct {
	Logger *slog.Logger
	// ConnectTimeout bounds starting (or reaching) a server, the MCP
	// handshake and, at start-up, listing its tools (default 30 s).
	ConnectTimeout time.Duration
	// PingTimeout bounds the liveness check before each call (default 5 s).
	PingTimeout time.Duration
	// Transport, if set, replaces the stdio and HTTP transports (tests
	// connect in-memory servers with it). It is called for every
	// connection, the first and each reconnection.
	Transport func(server string, sc ServerConfig) (mcp.Transport, error)
}

// Status is what start-up found of one server.
type Status struct {
	Server string
	// Transport is "stdio" or "http".
	Transport string
	// Tools is how many of its tools were added to the catalog.
	Tools int
	// Skipped names tools whose names no permission rule could name.
	Skipped []string
	// Err is why the server is not available (nil: it is).
	Err error
}

// Pool holds one client session per configured server. Its tools join the
// catalog; it is the executor of kind Kind.
type Pool struct {
	opts    Options
	log     *slog.Logger
	client  *mcp.Client
	names   []string
	servers map[string]*server
	// sessions maps each live *mcp.ClientSession to its server's name.
	sessions sync.Map
}

// server is one downstream server and its current session.
type server struct {
	name   string
	cfg    ServerConfig
	stderr *tail

	// inflight counts calls sent on the current session and not yet
	// answered: a session that misses a ping while it has some is not torn
	// down (that would cut them off, making them unknown).
	inflight atomic.Int32

	mu      sync.Mutex
	session *mcp.ClientSession
	ended   chan struct{} // closed when session's connection ends
	tools   []*mcp.Tool
}

// Start connects to every configured server and lists its tools. A server
// that cannot be started or listed does not stop the others (nor the
// lifecycle, which must keep serving approvals, receipts and recovery):
// its Status carries the error, its tools are not in the catalog, and a
// call of one of its tools tries to connect again before anything is sent.
func Start(ctx context.Context, cfg Config, opts Options) (*Pool, []Status) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 30 * time.Second
	}
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = 5 * time.Second
	}
	// No roots, sampling or elicitation: a downstream server gets nothing
	// from the agent's side, and nobody inside a tool call can answer for
	// the human.
	p := &Pool{opts: opts, log: opts.Logger, servers: map[string]*server{}}
	p.client = mcp.NewClient(&mcp.Implementation{Name: "openprogram-lifecycle", Version: "1"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{},
			// The catalog is read at start-up; say so when it goes stale.
			ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
				p.log.Warn("an MCP server's tools changed; the catalog is read at start-up, restart serve to list them",
					"mcp_server", p.serverOf(req.Session))
			}})
	for name, sc := range cfg.Servers {
		p.names = append(p.names, name)
		p.servers[name] = &server{name: name, cfg: sc, stderr: newTail(name, opts.Logger)}
	}
	sort.Strings(p.names)
	statuses := make([]Status, len(p.names))
	var wg sync.WaitGroup
	for i, name := range p.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = p.startServer(ctx, p.servers[name])
		}()
	}
	wg.Wait()
	for _, st := range statuses {
		if st.Err != nil {
			p.log.Error("MCP server not available; its tools are not listed", "mcp_server", st.Server, "error", st.Err)
			continue
		}
		p.log.Info("MCP server connected", "mcp_server", st.Server, "transport", st.Transport, "tools", st.Tools, "skipped", st.Skipped)
	}
	return p, statuses
}

func (p *Pool) startServer(ctx context.Context, s *server) Status {
	st := Status{Server: s.name, Transport: "http"}
	if s.cfg.Stdio() {
		st.Transport = "stdio"
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.ConnectTimeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := p.connectLocked(ctx, s)
	if err != nil {
		st.Err = err
		return st
	}
	var tools []*mcp.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			st.Err = fmt.Errorf("list tools: %w", err)
			return st
		}
		if !toolPart.MatchString(t.Name) {
			st.Skipped = append(st.Skipped, t.Name)
			continue
		}
		tools = append(tools, t)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	s.tools, st.Tools = tools, len(tools)
	return st
}

// connectLocked starts a new session (s.mu held).
func (p *Pool) connectLocked(ctx context.Context, s *server) (*mcp.ClientSession, error) {
	if old := s.session; old != nil {
		// In the background: closing waits for the old session's calls to
		// end and for its process to exit (up to TerminateDuration, then
		// SIGTERM, SIGKILL), and the new connection need not wait for that.
		go func() { _ = old.Close() }()
		s.session, s.ended = nil, nil
	}
	var t mcp.Transport
	var err error
	if p.opts.Transport != nil {
		t, err = p.opts.Transport(s.name, s.cfg)
	} else {
		t, err = s.transport()
	}
	if err != nil {
		return nil, err
	}
	sess, err := p.client.Connect(ctx, t, nil)
	if err != nil {
		if last := s.stderr.String(); last != "" {
			return nil, fmt.Errorf("connect: %w; its last stderr: %s", err, last)
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	p.sessions.Store(sess, s.name)
	ended := make(chan struct{})
	go func() {
		_ = sess.Wait()
		p.sessions.Delete(sess)
		close(ended)
	}()
	s.session, s.ended = sess, ended
	return sess, nil
}

// transport is the real transport of the server's configuration.
func (s *server) transport() (mcp.Transport, error) {
	if s.cfg.Stdio() {
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = childEnv(os.Environ(), s.cfg.Env)
		cmd.Stderr = s.stderr
		// Its own process group: a Ctrl-C at serve's terminal reaches
		// serve, which lets running calls finish and then closes the
		// server (stdin closed, then SIGTERM, SIGKILL), instead of killing
		// the server under them. A killed serve leaves it EOF on stdin.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
	return &mcp.StreamableClientTransport{
		Endpoint:   s.cfg.URL,
		HTTPClient: &http.Client{Transport: headers{base: http.DefaultTransport, set: s.cfg.Headers}},
		// Only responses to our own calls matter; no standing stream.
		DisableStandaloneSSE: true,
	}, nil
}

// childEnv is the lifecycle's environment minus its own LIFECYCLE_*
// variables (tokens), plus the server's configured variables.
func childEnv(parent []string, extra map[string]string) []string {
	out := make([]string, 0, len(parent)+len(extra))
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := extra[k]; replaced || strings.HasPrefix(k, "LIFECYCLE_") {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// headers adds the configured headers to every request.
type headers struct {
	base http.RoundTripper
	set  map[string]string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.set) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.set {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// serverOf names the server of a session ("" if unknown). It takes no
// server lock: it runs in the SDK's handler of the session's messages,
// which a connecting server's lock holder may be waiting on.
func (p *Pool) serverOf(cs *mcp.ClientSession) string {
	if name, ok := p.sessions.Load(cs); ok {
		return name.(string)
	}
	return ""
}

// Specs are the downstream tools for the catalog (permission.ToolSpec),
// named mcp__<server>__<tool>, with their descriptions and input schemas,
// in server then tool order.
func (p *Pool) Specs() []permission.ToolSpec {
	var out []permission.ToolSpec
	for _, name := range p.names {
		s := p.servers[name]
		s.mu.Lock()
		for _, t := range s.tools {
			schema, err := json.Marshal(t.InputSchema)
			if err != nil || t.InputSchema == nil {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			out = append(out, permission.ToolSpec{Name: ToolName(name, t.Name), Description: t.Description, InputSchema: schema})
		}
		s.mu.Unlock()
	}
	return out
}

// Routes sends every tool of every configured server (listed or not) to
// this executor: mcp__<server>__* -> Kind.
func (p *Pool) Routes() executor.Routes {
	r := executor.Routes{}
	for _, name := range p.names {
		r[Prefix+name+"__*"] = Kind
	}
	return r
}

// Servers lists the configured server names.
func (p *Pool) Servers() []string { return append([]string(nil), p.names...) }

// Close ends every session (a stdio server's stdin is closed; it is
// terminated if it does not exit).
func (p *Pool) Close() error {
	var errs []error
	for _, name := range p.names {
		s := p.servers[name]
		s.mu.Lock()
		if s.session != nil {
			if err := s.session.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
				errs = append(errs, fmt.Errorf("close MCP server %q: %w", name, err))
			}
			s.session, s.ended = nil, nil
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}
