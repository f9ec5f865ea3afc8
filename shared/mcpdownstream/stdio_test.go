package mcpdownstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/mcpdownstream"
)

// TestMain turns the test binary into a stdio MCP server when it is
// started as one (the stdio tests below configure it as a command), so
// the real CommandTransport, a real process and its death are tested.
func TestMain(m *testing.M) {
	if os.Getenv("MCPDOWN_TEST_SERVER") == "1" {
		os.Exit(stdioServer())
	}
	os.Exit(m.Run())
}

func stdioServer() int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	srv.AddTool(&mcp.Tool{Name: "getenv", InputSchema: objectSchema(nil)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		v, ok := os.LookupEnv(in.Name)
		return text(fmt.Sprintf("%s=%q set=%v", in.Name, v, ok)), nil
	})
	srv.AddTool(&mcp.Tool{Name: "pid", InputSchema: objectSchema(nil)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strconv.Itoa(os.Getpid())), nil
	})
	srv.AddTool(&mcp.Tool{Name: "exit", InputSchema: objectSchema(nil)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(7) // dies mid-call, after the request arrived
		return nil, nil
	})
	fmt.Fprintln(os.Stderr, "stdio-test server ready")
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func call(t *testing.T, p *mcpdownstream.Pool, tool, args string) (actionflow.ToolResult, error) {
	t.Helper()
	if err := p.Ready(context.Background(), tool); err != nil {
		t.Fatalf("ready %s: %v", tool, err)
	}
	return p.Execute(context.Background(), actionflow.Task{Tool: tool, Arguments: []byte(args), IdempotencyKey: "act_1"})
}

// TestStdioServer: a real process over stdio gets its configured
// environment and never the lifecycle's own variables; killed, it is
// started again on the next call; dying during a call is unknown.
func TestStdioServer(t *testing.T) {
	t.Setenv("LIFECYCLE_TOKEN", "agent-secret")
	t.Setenv("MCPDOWN_INHERITED", "yes")
	cfg := mcpdownstream.Config{Servers: map[string]mcpdownstream.ServerConfig{"proc": {Command: os.Args[0],
		Args: []string{"-test.run=^$"}, Env: map[string]string{"MCPDOWN_TEST_SERVER": "1", "TICKETS_KEY": "k1"}}}}
	p, statuses := mcpdownstream.Start(context.Background(), cfg, mcpdownstream.Options{Logger: quiet()})
	defer p.Close()
	if statuses[0].Err != nil || statuses[0].Tools != 3 {
		t.Fatalf("start: %+v", statuses[0])
	}
	for _, c := range []struct{ name, want string }{
		{"TICKETS_KEY", `TICKETS_KEY="k1" set=true`},
		{"MCPDOWN_INHERITED", `MCPDOWN_INHERITED="yes" set=true`},
		{"LIFECYCLE_TOKEN", `LIFECYCLE_TOKEN="" set=false`},
	} {
		res, err := call(t, p, "mcp__proc__getenv", `{"name":"`+c.name+`"}`)
		if err != nil || res.Outcome != lifecycle.OutcomeSucceeded || res.Output != c.want {
			t.Fatalf("getenv %s: %+v %v, want %s", c.name, res, err, c.want)
		}
	}
	res, err := call(t, p, "mcp__proc__pid", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(res.Output)
	if err != nil {
		t.Fatal(res.Output, err)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Fatalf("the server's process group is %d (%v); want its own (%d), out of reach of serve's terminal", pgid, err, pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res, err = call(t, p, "mcp__proc__pid", `{}`)
	if err != nil || res.Outcome != lifecycle.OutcomeSucceeded || res.Output == strconv.Itoa(pid) || res.Output == "" {
		t.Fatalf("after the server was killed: %+v %v (old pid %d)", res, err, pid)
	}
	res, err = call(t, p, "mcp__proc__exit", `{}`)
	if err == nil || !strings.Contains(err.Error(), "may have run") {
		t.Fatalf("a server dying during the call: %+v %v, want an error (outcome unknown)", res, err)
	}
}

// BenchmarkStdioCall: what the executor adds to a call of a stdio server
// (the readiness ping and tools/call), against the Go SDK test server.
func BenchmarkStdioCall(b *testing.B) {
	cfg := mcpdownstream.Config{Servers: map[string]mcpdownstream.ServerConfig{"proc": {Command: os.Args[0],
		Args: []string{"-test.run=^$"}, Env: map[string]string{"MCPDOWN_TEST_SERVER": "1"}}}}
	p, statuses := mcpdownstream.Start(context.Background(), cfg, mcpdownstream.Options{Logger: quiet()})
	defer p.Close()
	if statuses[0].Err != nil {
		b.Fatal(statuses[0].Err)
	}
	ctx := context.Background()
	task := actionflow.Task{Tool: "mcp__proc__pid", Arguments: []byte(`{}`)}
	for b.Loop() {
		if err := p.Ready(ctx, task.Tool); err != nil {
			b.Fatal(err)
		}
		if res, err := p.Execute(ctx, task); err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
			b.Fatal(res, err)
		}
	}
}
