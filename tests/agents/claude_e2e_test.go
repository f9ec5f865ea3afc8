package agents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/tests/internal/harness"
)

// claudeEvent is one line of `claude -p --output-format stream-json --verbose`.
type claudeEvent struct {
	Type       string `json:"type"`
	Subtype    string `json:"subtype"`
	Result     string `json:"result"`
	IsError    bool   `json:"is_error"`
	MCPServers []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"mcp_servers"`
	Message struct {
		Content []struct {
			Type      string          `json:"type"`
			Name      string          `json:"name"`
			IsError   bool            `json:"is_error"`
			Content   json.RawMessage `json:"content"`
			ToolUseID string          `json:"tool_use_id"`
		} `json:"content"`
	} `json:"message"`
}

// TestClaudeCodeCallsLifecycleTool is the approved case of the Codex test
// with Claude Code, over streamable HTTP and over stdio through `lifecycle
// mcp` (`make test-agents`; skipped when Claude Code is not installed).
func TestClaudeCodeCallsLifecycleTool(t *testing.T) {
	bin := harness.Tool(t, "test-agents", ".tools/claude-code-*/node_modules/.bin/claude", "LIFECYCLE_CLAUDE_CODE_REQUIRED")
	for _, tc := range []struct {
		name  string
		stdio bool
	}{
		{name: "streamable HTTP with a bearer header"},
		{name: "stdio through lifecycle mcp", stdio: true},
	} {
		t.Run(tc.name, func(t *testing.T) { claudeApproved(t, bin, tc.stdio) })
	}
}

func claudeApproved(t *testing.T, bin string, stdio bool) {
	srv := harness.StartServe(t, "ses_claude")
	srv.SetPolicy(t, askPolicy)
	nonce := fmt.Sprintf("claude-%d", time.Now().UnixNano())
	const final = "The lifecycle ran the command after approval."
	model := startModel(t, messagesTurn, messagesAPI,
		modelTurn{Tool: "mcp__lifecycle__Bash", Arguments: map[string]any{"command": proofCommand(nonce)}},
		modelTurn{Text: final})

	home := t.TempDir()
	mcpConfig := filepath.Join(home, "mcp.json")
	cfg := fmt.Sprintf(`{"mcpServers":{"lifecycle":{"type":"http","url":%q,"headers":{"Authorization":"Bearer ${LIFECYCLE_TOKEN}"}}}}`, srv.MCPURL())
	if stdio {
		cfg = fmt.Sprintf(`{"mcpServers":{"lifecycle":{"type":"stdio","command":%q,"args":["mcp","--api",%q],"env":{"LIFECYCLE_TOKEN":"${LIFECYCLE_TOKEN}"}}}}`, srv.Bin, srv.Base)
	}
	if err := os.WriteFile(mcpConfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	approved := make(chan error, 1)
	go func() {
		_, err := srv.DecideNext(ctx, "approve")
		approved <- err
	}()
	cmd := exec.CommandContext(ctx, bin, "-p", "Record the proof in the workspace with the lifecycle's Bash tool.",
		"--output-format", "stream-json", "--verbose", "--no-session-persistence",
		"--mcp-config", mcpConfig, "--strict-mcp-config", "--allowedTools", "mcp__lifecycle")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(), "NO_PROXY=127.0.0.1,localhost",
		"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=sk-ant-scripted",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "ENABLE_TOOL_SEARCH=false", "MCP_TOOL_TIMEOUT=600000",
		"LIFECYCLE_TOKEN=" + srv.AgentToken(t)}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	t.Logf("claude -p took %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		logRun(t, "claude", stdout.Bytes(), stderr.Bytes())
		t.Fatalf("claude -p: %v", err)
	}
	if err := awaitDecision(approved); err != nil {
		logRun(t, "claude", stdout.Bytes(), stderr.Bytes())
		t.Fatalf("approve through the API: %v", err)
	}

	var events []claudeEvent
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e claudeEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type != "" {
			events = append(events, e)
		}
	}
	// Claude Code exits 0 with a server it could not connect: the init event says.
	connected := false
	var results []string
	finalText := ""
	for _, e := range events {
		if e.Type == "system" && e.Subtype == "init" {
			for _, s := range e.MCPServers {
				connected = connected || (s.Name == "lifecycle" && s.Status == "connected")
			}
		}
		if e.Type == "user" {
			for _, c := range e.Message.Content {
				if c.Type == "tool_result" {
					results = append(results, string(c.Content))
				}
			}
		}
		if e.Type == "result" {
			finalText = e.Result
		}
	}
	if !connected {
		logRun(t, "claude", stdout.Bytes(), stderr.Bytes())
		t.Fatal("claude's init event does not show the lifecycle MCP server connected")
	}
	if len(results) != 1 || !strings.Contains(results[0], "proof "+nonce) {
		logRun(t, "claude", stdout.Bytes(), stderr.Bytes())
		t.Fatalf("claude's tool results %q, want one holding the command's output %q", results, "proof "+nonce)
	}
	if finalText != final {
		t.Errorf("claude's result %q, want the model's final answer %q", finalText, final)
	}
	b, err := os.ReadFile(filepath.Join(srv.Workspace, "proof.txt"))
	if err != nil {
		t.Fatalf("the tool did not run: %v", err)
	}
	if got := strings.Count(string(b), nonce); got != 1 {
		t.Errorf("proof.txt holds the nonce %d times, want 1:\n%s", got, b)
	}
	turns := model.Turns()
	if len(turns) != 2 {
		t.Fatalf("the model got %d conversation requests, want 2", len(turns))
	}
	if bytes.Contains(turns[0], []byte("proof "+nonce)) {
		t.Error("the first model request already holds the output: the assertion below would prove nothing")
	}
	if !bytes.Contains(turns[1], []byte("tool_result")) || !bytes.Contains(turns[1], []byte("proof "+nonce)) {
		t.Errorf("the model request after the call lacks the tool's real output:\n%s", trim(turns[1], 4000))
	}
}
