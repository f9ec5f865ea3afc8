package mcpdownstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/mcpdownstream"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// downstream is an in-process Go SDK server standing in for a configured
// one. Every connection (the first and each reconnection) gets a fresh
// in-memory pipe to it (net.Pipe, what mcp.NewInMemoryTransports makes,
// kept here so a test can cut it the way a dying process closes its
// stdio).
type downstream struct {
	srv      *mcp.Server
	down     atomic.Bool  // the server cannot be started
	connects atomic.Int32 // connections made
	ran      atomic.Int32 // tool handlers entered

	mu    sync.Mutex
	pipes []net.Conn
}

func objectSchema(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required}
}

func newDownstream(t *testing.T) *downstream {
	t.Helper()
	d := &downstream{srv: mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	d.srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes its text.",
		InputSchema: objectSchema(map[string]*jsonschema.Schema{"text": {Type: "string"}}, "text")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d.ran.Add(1)
			var in struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return text("echo: " + in.Text), nil
		})
	d.srv.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: objectSchema(nil)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d.ran.Add(1)
			r := text("boom: the ticket is locked")
			r.IsError = true
			return r, nil
		})
	d.srv.AddTool(&mcp.Tool{Name: "slow", Description: "Never answers in time.", InputSchema: objectSchema(nil)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d.ran.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	d.srv.AddTool(&mcp.Tool{Name: "crash", Description: "Dies while running.", InputSchema: objectSchema(nil)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d.ran.Add(1)
			d.kill()
			<-ctx.Done()
			return nil, ctx.Err()
		})
	d.srv.AddTool(&mcp.Tool{Name: "internal", Description: "A protocol-level failure.", InputSchema: objectSchema(nil)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d.ran.Add(1)
			return nil, errors.New("database went away halfway")
		})
	d.srv.AddTool(&mcp.Tool{Name: "bad.name", Description: "A name no rule can name.", InputSchema: objectSchema(nil)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("unreachable"), nil
		})
	t.Cleanup(d.kill)
	return d
}

func (d *downstream) transport(server string, sc mcpdownstream.ServerConfig) (mcp.Transport, error) {
	if d.down.Load() {
		return nil, errors.New(`exec: "tickets-mcp": executable file not found in $PATH`)
	}
	client, srv := net.Pipe()
	if _, err := d.srv.Connect(context.Background(), &mcp.IOTransport{Reader: srv, Writer: srv}, nil); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.pipes = append(d.pipes, srv)
	d.mu.Unlock()
	d.connects.Add(1)
	return &mcp.IOTransport{Reader: client, Writer: client}, nil
}

// kill cuts every connection, as a crashed stdio process closes its pipes.
func (d *downstream) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.pipes {
		c.Close()
	}
	d.pipes = nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startPool(t *testing.T, d *downstream, timeoutSeconds int) *mcpdownstream.Pool {
	t.Helper()
	cfg := mcpdownstream.Config{Servers: map[string]mcpdownstream.ServerConfig{
		"tickets": {Command: "tickets-mcp", TimeoutSeconds: timeoutSeconds}}}
	p, statuses := mcpdownstream.Start(context.Background(), cfg, mcpdownstream.Options{Logger: quiet(), Transport: d.transport})
	t.Cleanup(func() { p.Close() })
	if len(statuses) != 1 || statuses[0].Err != nil {
		t.Fatalf("start: %+v", statuses)
	}
	return p
}

// allowAll decides every call allowed: the permission engine's own rules
// for mcp__ tools are tested with it; here only the executor matters.
type allowAll struct{}

func (allowAll) Decide(ctx context.Context, a actionflow.Action) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow, PolicyVersion: "v1", Reason: actionflow.Reason{Source: "test", Code: "allow"}}, nil
}
func (allowAll) Revalidate(ctx context.Context, a actionflow.Action, prior actionflow.Decision, ap actionflow.Approval) (actionflow.Decision, error) {
	return prior, nil
}
func (allowAll) ApprovalCompleted(context.Context, actionflow.Action, actionflow.Approval) error {
	return nil
}

type noStart struct{}

func (noStart) StartAction(context.Context, ids.ActionID, []byte) error { return nil }

// lifecycleOf runs one call through submit, authorize, dispatch and record
// as the state machine does (a dispatch NotStartedError is caught into
// record after the ASL's retries) and returns the sealed receipt and
// whether start evidence was written.
func lifecycleOf(t *testing.T, p *mcpdownstream.Pool, tool, args string) (actionflow.Receipt, bool) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := actionflow.New(actionflow.Config{Store: st, Decider: allowAll{}, Router: p.Routes(),
		Executors: map[string]actionflow.Executor{mcpdownstream.Kind: p}, Starter: noStart{}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := svc.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_1", ToolCallID: "call_1", Tool: tool,
		Arguments: json.RawMessage(args), Interactive: true, Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	in := actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID}
	if d, err := svc.Authorize(ctx, in); err != nil || d.Permission != lifecycle.PermissionAllow {
		t.Fatalf("authorize: %+v %v", d, err)
	}
	in.Mode = "sync"
	res, err := svc.Dispatch(ctx, in)
	var ns *actionflow.NotStartedError
	switch {
	case errors.As(err, &ns):
		in.Error = &actionflow.CaughtError{Error: "NotStartedError", Cause: err.Error()}
	case err != nil:
		t.Fatalf("dispatch: %v", err)
	default:
		in.Result = &res
	}
	if _, err := svc.Record(ctx, in); err != nil {
		t.Fatalf("record: %v", err)
	}
	rc, err := svc.GetReceipt(ctx, a.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.GetAction(ctx, a.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	return rc, got.Start != nil
}

// TestDispatchClassifiesDownstreamOutcomes: every way a downstream call
// can end, through the real dispatch and record steps to the receipt.
func TestDispatchClassifiesDownstreamOutcomes(t *testing.T) {
	cases := []struct {
		name    string
		tool    string
		args    string
		timeout int
		before  func(d *downstream)
		outcome lifecycle.Outcome
		code    string
		text    string // in the receipt's output or error
		started bool
		ran     int32
	}{
		{name: "result is succeeded with its text", tool: "mcp__tickets__echo", args: `{"text":"hi"}`,
			outcome: lifecycle.OutcomeSucceeded, text: "echo: hi", started: true, ran: 1},
		{name: "isError is failed with the tool's text", tool: "mcp__tickets__fail", args: `{}`,
			outcome: lifecycle.OutcomeFailed, code: "tool_error", text: "boom: the ticket is locked", started: true, ran: 1},
		{name: "unknown tool is refused, failed, nothing ran", tool: "mcp__tickets__nosuch", args: `{}`,
			outcome: lifecycle.OutcomeFailed, code: "mcp_invalid_params", text: "unknown tool", started: true, ran: 0},
		{name: "no response within the deadline is unknown", tool: "mcp__tickets__slow", args: `{}`, timeout: 1,
			outcome: lifecycle.OutcomeUnknown, code: "executor_error", text: "no response within 1s", started: true, ran: 1},
		{name: "connection lost during the call is unknown", tool: "mcp__tickets__crash", args: `{}`,
			outcome: lifecycle.OutcomeUnknown, code: "executor_error", text: "connection closed", started: true, ran: 1},
		{name: "a protocol error from the server is unknown", tool: "mcp__tickets__internal", args: `{}`,
			outcome: lifecycle.OutcomeUnknown, code: "executor_error", text: "database went away", started: true, ran: 1},
		{name: "server dead and not restartable before sending is not_started", tool: "mcp__tickets__echo", args: `{"text":"hi"}`,
			before:  func(d *downstream) { d.kill(); d.down.Store(true) },
			outcome: lifecycle.OutcomeNotStarted, code: "NotStartedError", text: "not reachable, nothing was sent", started: false, ran: 0},
		{name: "server dead but restartable reconnects and runs", tool: "mcp__tickets__echo", args: `{"text":"again"}`,
			before:  func(d *downstream) { d.kill() },
			outcome: lifecycle.OutcomeSucceeded, text: "echo: again", started: true, ran: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newDownstream(t)
			p := startPool(t, d, c.timeout)
			if c.before != nil {
				c.before(d)
			}
			rc, started := lifecycleOf(t, p, c.tool, c.args)
			if rc.Outcome != c.outcome || rc.ErrorCode != c.code {
				t.Fatalf("receipt %s/%s (%s), want %s/%s", rc.Outcome, rc.ErrorCode, rc.Error, c.outcome, c.code)
			}
			if !strings.Contains(rc.Output+" "+rc.Error, c.text) {
				t.Fatalf("receipt output %q error %q, want %q in them", rc.Output, rc.Error, c.text)
			}
			if started != c.started {
				t.Fatalf("start evidence %v, want %v", started, c.started)
			}
			if got := d.ran.Load(); got != c.ran {
				t.Fatalf("the downstream tool ran %d times, want %d", got, c.ran)
			}
			if c.outcome == lifecycle.OutcomeUnknown && rc.Reconciliation == "" {
				t.Fatal("an unknown receipt must ask for reconciliation")
			}
		})
	}
}

// TestReadyReconnectsLazily: a server found dead is connected again on the
// next call, not before; a live one is pinged, not reconnected.
func TestReadyReconnectsLazily(t *testing.T) {
	ctx := context.Background()
	d := newDownstream(t)
	p := startPool(t, d, 0)
	if n := d.connects.Load(); n != 1 {
		t.Fatalf("%d connections at start, want 1", n)
	}
	if err := p.Ready(ctx, "mcp__tickets__echo"); err != nil {
		t.Fatal(err)
	}
	if n := d.connects.Load(); n != 1 {
		t.Fatalf("a live server was connected again (%d connections)", n)
	}
	d.kill()
	if n := d.connects.Load(); n != 1 {
		t.Fatalf("reconnected before any call (%d connections)", n)
	}
	if err := p.Ready(ctx, "mcp__tickets__echo"); err != nil {
		t.Fatal(err)
	}
	if n := d.connects.Load(); n != 2 {
		t.Fatalf("%d connections after the dead server's next call, want 2", n)
	}
	res, err := p.Execute(ctx, actionflow.Task{Tool: "mcp__tickets__echo", Arguments: []byte(`{"text":"x"}`), IdempotencyKey: "act_1"})
	if err != nil || res.Outcome != lifecycle.OutcomeSucceeded || res.Output != "echo: x" {
		t.Fatalf("after reconnecting: %+v %v", res, err)
	}
	d.kill()
	d.down.Store(true)
	err = p.Ready(ctx, "mcp__tickets__echo")
	var nr *mcpdownstream.NotReachableError
	if !errors.As(err, &nr) || nr.Server != "tickets" || !strings.Contains(err.Error(), "executable file not found") {
		t.Fatalf("Ready of a server that cannot start: %v", err)
	}
}

// TestCatalogAndRoutes: listed tools become mcp__<server>__<tool> with
// their schemas and descriptions; a name no rule could name is skipped
// and reported; every tool of the server routes to the executor.
func TestCatalogAndRoutes(t *testing.T) {
	d := newDownstream(t)
	cfg := mcpdownstream.Config{Servers: map[string]mcpdownstream.ServerConfig{"tickets": {Command: "tickets-mcp"}}}
	p, statuses := mcpdownstream.Start(context.Background(), cfg, mcpdownstream.Options{Logger: quiet(), Transport: d.transport})
	defer p.Close()
	if len(statuses) != 1 || statuses[0].Err != nil || statuses[0].Tools != 5 || len(statuses[0].Skipped) != 1 || statuses[0].Skipped[0] != "bad.name" {
		t.Fatalf("status %+v", statuses)
	}
	specs := p.Specs()
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "mcp__tickets__crash,mcp__tickets__echo,mcp__tickets__fail,mcp__tickets__internal,mcp__tickets__slow" {
		t.Fatalf("catalog %s", got)
	}
	echo := specs[1]
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(echo.InputSchema, &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil ||
		len(schema.Required) != 1 || echo.Description != "Echoes its text." {
		t.Fatalf("echo spec %+v (%s): %v", echo, echo.InputSchema, err)
	}
	for tool, want := range map[string]bool{"mcp__tickets__echo": true, "mcp__tickets__not_listed": true, "mcp__other__echo": false, "Bash": false} {
		kind, ok := p.Routes().Route(tool)
		if ok != want || (ok && kind != mcpdownstream.Kind) {
			t.Errorf("route %s = %q, %v; want routed %v", tool, kind, ok, want)
		}
	}
}

// TestStartReportsAServerThatWillNotStart: a real command that does not
// exist; the other server is still there.
func TestStartReportsAServerThatWillNotStart(t *testing.T) {
	cfg := mcpdownstream.Config{Servers: map[string]mcpdownstream.ServerConfig{
		"broken": {Command: filepath.Join(t.TempDir(), "no-such-server")},
		"exits":  {Command: "sh", Args: []string{"-c", "echo 'fatal: missing API key' >&2; exit 3"}},
	}}
	p, statuses := mcpdownstream.Start(context.Background(), cfg, mcpdownstream.Options{Logger: quiet(), ConnectTimeout: 20 * time.Second})
	defer p.Close()
	if len(statuses) != 2 {
		t.Fatalf("statuses %+v", statuses)
	}
	if st := statuses[0]; st.Server != "broken" || st.Err == nil || !strings.Contains(st.Err.Error(), "no-such-server") {
		t.Fatalf("broken: %+v", st)
	}
	if st := statuses[1]; st.Server != "exits" || st.Err == nil || !strings.Contains(st.Err.Error(), "fatal: missing API key") {
		t.Fatalf("exits: %+v", st)
	}
	if len(p.Specs()) != 0 {
		t.Fatalf("tools of servers that are not there: %+v", p.Specs())
	}
	if _, ok := p.Routes().Route("mcp__broken__anything"); !ok {
		t.Fatal("a server that failed at start-up keeps its route (a call connects again first)")
	}
	var nr *mcpdownstream.NotReachableError
	if err := p.Ready(context.Background(), "mcp__broken__anything"); !errors.As(err, &nr) {
		t.Fatalf("Ready: %v", err)
	}
}

// TestConcurrentCallsAcrossAReconnect: calls share one session; the server
// dies while they run; the calls after it reconnect once between them,
// and no call is ever sent twice (the server runs at most one handler
// per Execute).
func TestConcurrentCallsAcrossAReconnect(t *testing.T) {
	d := newDownstream(t)
	p := startPool(t, d, 0)
	const workers, each = 16, 6
	var executed, succeeded atomic.Int32
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if w == 0 && i == each/2 {
					d.kill()
				}
				if err := p.Ready(context.Background(), "mcp__tickets__echo"); err != nil {
					t.Errorf("ready: %v", err)
					continue
				}
				executed.Add(1)
				res, err := p.Execute(context.Background(), actionflow.Task{Tool: "mcp__tickets__echo", Arguments: []byte(`{"text":"x"}`)})
				if err == nil && res.Outcome == lifecycle.OutcomeSucceeded {
					succeeded.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if ran, ex := d.ran.Load(), executed.Load(); ran > ex {
		t.Fatalf("the server ran %d calls for %d Execute calls", ran, ex)
	}
	if n := d.connects.Load(); n < 2 || n > 1+workers {
		t.Fatalf("%d connections; want the start plus a few reconnections", n)
	}
	if succeeded.Load() < workers*each/2 {
		t.Fatalf("only %d of %d calls succeeded", succeeded.Load(), workers*each)
	}
}

// TestBusyServerKeepsItsSession: a server that misses a ping while a call
// of it runs is busy, not dead: the next call is not sent (not ready, so
// not_started and retried) and the running call keeps its session; once
// nothing runs, a missed ping means a new connection.
func TestBusyServerKeepsItsSession(t *testing.T) {
	d := newDownstream(t)
	var mute atomic.Bool
	d.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "ping" && mute.Load() {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return next(ctx, method, req)
		}
	})
	cfg := mcpdownstream.Config{Servers: map[string]mcpdownstream.ServerConfig{"tickets": {Command: "tickets-mcp"}}}
	p, _ := mcpdownstream.Start(context.Background(), cfg, mcpdownstream.Options{Logger: quiet(), Transport: d.transport,
		PingTimeout: 200 * time.Millisecond})
	defer p.Close()

	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan error, 1)
	go func() {
		_, err := p.Execute(ctx, actionflow.Task{Tool: "mcp__tickets__slow", Arguments: []byte(`{}`)})
		running <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); d.ran.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never reached the server")
		}
	}
	mute.Store(true)
	var nr *mcpdownstream.NotReachableError
	if err := p.Ready(context.Background(), "mcp__tickets__echo"); !errors.As(err, &nr) || !strings.Contains(err.Error(), "1 call(s) run") {
		t.Fatalf("Ready of a busy server: %v", err)
	}
	if n := d.connects.Load(); n != 1 {
		t.Fatalf("a busy server's session was replaced (%d connections)", n)
	}
	select {
	case err := <-running:
		t.Fatalf("the running call was cut off: %v", err)
	default:
	}
	cancel()
	<-running
	if err := p.Ready(context.Background(), "mcp__tickets__echo"); err != nil {
		t.Fatalf("Ready once nothing runs: %v", err)
	}
	if n := d.connects.Load(); n != 2 {
		t.Fatalf("a server that misses a ping with nothing running: %d connections, want 2", n)
	}
}

// syncBuffer is a log sink safe for the SDK's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestToolListChangedIsReported: the catalog is read at start-up; a
// server announcing new tools gets a warning naming it, not a silent
// stale list.
func TestToolListChangedIsReported(t *testing.T) {
	d := newDownstream(t)
	var logs syncBuffer
	cfg := mcpdownstream.Config{Servers: map[string]mcpdownstream.ServerConfig{"tickets": {Command: "tickets-mcp"}}}
	p, _ := mcpdownstream.Start(context.Background(), cfg, mcpdownstream.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Transport: d.transport})
	defer p.Close()
	d.srv.AddTool(&mcp.Tool{Name: "late", InputSchema: objectSchema(nil)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if slices.ContainsFunc(strings.Split(logs.String(), "\n"), func(line string) bool {
			return strings.Contains(line, "tools changed") && strings.Contains(line, "mcp_server=tickets")
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warning naming the server after its tools changed:\n%s", logs.String())
		}
	}
	if len(p.Specs()) != 5 {
		t.Fatalf("the catalog changed after start-up: %d tools", len(p.Specs()))
	}
}
