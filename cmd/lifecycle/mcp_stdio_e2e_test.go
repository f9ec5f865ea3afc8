package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// buildLifecycle builds this command once per test into a temporary dir.
func buildLifecycle(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lifecycle")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// connectStdio launches `lifecycle mcp` as a client would and connects
// the Go SDK's client to it over its stdin/stdout.
func (s *serveStack) connectStdio(t *testing.T, bin, token string) *mcpClient {
	t.Helper()
	c := &mcpClient{changed: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: "lifecycle-stdio-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, r.Params.Message)
			c.mu.Unlock()
		},
	})
	cmd := exec.Command(bin, "mcp", "--api", s.base)
	cmd.Env = append(os.Environ(), "LIFECYCLE_TOKEN="+token)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to lifecycle mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// TestMCPStdioBridge drives `lifecycle mcp` (stdio) with the Go SDK's
// client over a CommandTransport: the same tools, results, approvals,
// cancellation and list_changed as /mcp, because every message is
// relayed unchanged.
func TestMCPStdioBridge(t *testing.T) {
	bin := buildLifecycle(t)
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"v1","allow":["Bash(echo *)"],"deny":["Bash(touch *)","Write"]}`)
	c := s.connectStdio(t, bin, s.agent(t, s.session))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	t.Run("list", func(t *testing.T) {
		tools := toolNames(t, c)
		if tools["Bash"] == nil || tools["Write"] != nil {
			t.Fatalf("tools over stdio: %v", tools)
		}
	})
	t.Run("allowed and denied", func(t *testing.T) {
		res := c.callTool(t, ctx, "Bash", map[string]any{"command": "echo via-stdio"}, nil)
		if res.IsError || strings.TrimSpace(resultText(res)) != "via-stdio" {
			t.Fatalf("allowed: isError=%v %q", res.IsError, resultText(res))
		}
		res = c.callTool(t, ctx, "Bash", map[string]any{"command": "touch nope.txt"}, nil)
		if !res.IsError || !strings.Contains(resultText(res), "Bash(touch *)") {
			t.Fatalf("denied: isError=%v %q", res.IsError, resultText(res))
		}
	})
	t.Run("ask approved, with progress relayed", func(t *testing.T) {
		out := make(chan *mcp.CallToolResult, 1)
		go func() {
			p := &mcp.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "printf ok > stdio-approved.txt"}}
			p.SetProgressToken(7)
			res, err := c.cs.CallTool(ctx, p)
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			out <- res
		}()
		ap := s.pendingApproval(t)
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(strings.Join(c.progressMessages(), "\n"), string(ap.ApprovalID)); {
			if time.Now().After(deadline) {
				t.Fatalf("no progress relayed: %q", c.progressMessages())
			}
			time.Sleep(50 * time.Millisecond)
		}
		s.decide(t, ap, "approve")
		if res := <-out; res.IsError {
			t.Fatalf("approved: %q", resultText(res))
		}
		if !s.exists(t, "stdio-approved.txt") {
			t.Fatal("the approved command did not run")
		}
	})
	t.Run("cancellation reaches the gateway", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.cs.CallTool(cctx, &mcp.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "printf x > stdio-cancelled.txt"}})
		}()
		ap := s.pendingApproval(t)
		ccancel()
		<-done
		v := s.recorded(t, ap.ActionID)
		if v.Approval.Status != "cancelled" || v.Receipt.Outcome != lifecycle.OutcomeNotStarted || s.exists(t, "stdio-cancelled.txt") {
			t.Fatalf("after cancel over stdio: approval %s outcome %s", v.Approval.Status, v.Receipt.Outcome)
		}
	})
	t.Run("list_changed relayed", func(t *testing.T) {
		for len(c.changed) > 0 {
			<-c.changed
		}
		s.setPolicy(t, `{"version":"v2","allow":["Bash(echo *)"],"deny":["Write","Edit"]}`)
		select {
		case <-c.changed:
		case <-time.After(30 * time.Second):
			t.Fatal("no list_changed over stdio")
		}
		if tools := toolNames(t, c); tools["Edit"] != nil {
			t.Fatalf("Edit still listed: %v", tools)
		}
	})
}

// TestMCPStdioBridgeWithoutAValidToken: the client learns at initialize
// that the token was refused, rather than hanging.
func TestMCPStdioBridgeWithoutAValidToken(t *testing.T) {
	bin := buildLifecycle(t)
	s := startServeStack(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cmd := exec.Command(bin, "mcp", "--api", s.base)
	cmd.Env = append(os.Environ(), "LIFECYCLE_TOKEN=not-a-token")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err == nil {
		cs.Close()
		t.Fatal("connected with an invalid token")
	}
	if !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Fatalf("the refusal does not say 401: %v", err)
	}
}
