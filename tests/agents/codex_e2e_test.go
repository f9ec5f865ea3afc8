package agents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/tests/internal/harness"
)

// askPolicy asks a person before every `printf` and allows nothing else
// of Bash by rule: the one tool call of the scripted model waits for the
// approval the test gives through the API with the human token.
const askPolicy = `{"version":"agents.1","ask":["Bash(printf *)"]}`

// proofCommand prints the nonce and appends it to proof.txt in the
// workspace: its output reaches the model only if the lifecycle ran it, and
// the file counts how many times it ran.
func proofCommand(nonce string) string {
	return fmt.Sprintf("printf '%%s\\n' %s >> proof.txt && printf 'proof %%s\\n' %s", nonce, nonce)
}

// TestCodexCallsLifecycleToolThroughApproval: Codex CLI (the real binary,
// pinned in the Makefile) connects to serve's /mcp with an agent token,
// the scripted model makes it call the lifecycle's Bash tool, the call
// waits for a person's approval, the test approves it through the HTTP API
// with the human token, the tool runs once, and Codex hands its real
// output back to the model, then prints the model's final message.
func TestCodexCallsLifecycleToolThroughApproval(t *testing.T) {
	bin := codexBinary(t)
	srv := harness.StartServe(t, "ses_codex")
	srv.SetPolicy(t, askPolicy)
	nonce := fmt.Sprintf("codex-%d", time.Now().UnixNano())
	const final = "The lifecycle ran the command after approval."
	model := startModel(t, responsesTurn, responsesAPI,
		modelTurn{Namespace: "mcp__lifecycle", Tool: "Bash", Arguments: map[string]any{"command": proofCommand(nonce)}},
		modelTurn{Text: final})

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	approved := make(chan error, 1)
	go func() {
		_, err := srv.DecideNext(ctx, "approve")
		approved <- err
	}()
	start := time.Now()
	run, err := runCodex(t, ctx, bin, codexConfig(model.URL, srv.MCPURL()), t.TempDir(), srv.AgentToken(t),
		"Record the proof in the workspace with the lifecycle's Bash tool.")
	t.Logf("codex exec took %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		logRun(t, "codex", run.stdout, run.stderr)
		t.Fatalf("codex exec: %v", err)
	}
	if err := <-approved; err != nil {
		logRun(t, "codex", run.stdout, run.stderr)
		t.Fatalf("approve through the API: %v", err)
	}

	calls := run.items("mcp_tool_call")
	if len(calls) != 1 {
		logRun(t, "codex", run.stdout, run.stderr)
		t.Fatalf("codex reported %d mcp_tool_call items, want 1", len(calls))
	}
	call := calls[0].Item
	if call.Server != "lifecycle" || call.Tool != "Bash" || call.Status != "completed" {
		t.Errorf("mcp_tool_call: server %q tool %q status %q, want lifecycle Bash completed", call.Server, call.Tool, call.Status)
	}
	if got := toolText(call.Result); !strings.Contains(got, "proof "+nonce) {
		t.Errorf("mcp_tool_call result %q lacks the command's output %q", got, "proof "+nonce)
	}
	if msgs := run.items("agent_message"); len(msgs) == 0 || msgs[len(msgs)-1].Item.Text != final {
		logRun(t, "codex", run.stdout, run.stderr)
		t.Errorf("codex's last agent message is not the model's final answer %q", final)
	}

	// The tool ran exactly once, in the lifecycle's workspace.
	b, err := os.ReadFile(filepath.Join(srv.Workspace, "proof.txt"))
	if err != nil {
		t.Fatalf("the tool did not run: %v", err)
	}
	if got := strings.Count(string(b), nonce); got != 1 {
		t.Errorf("proof.txt holds the nonce %d times, want 1 (the tool ran %d times):\n%s", got, got, b)
	}

	// The model saw the real output: the request after the call carries it.
	turns := model.Turns()
	if len(turns) != 2 {
		t.Fatalf("the model got %d requests, want 2 (the call, then the answer after its result)", len(turns))
	}
	if bytes.Contains(turns[0], []byte("proof "+nonce)) {
		t.Error("the first model request already holds the output: the assertion below would prove nothing")
	}
	if !bytes.Contains(turns[1], []byte("function_call_output")) || !bytes.Contains(turns[1], []byte("proof "+nonce)) {
		t.Errorf("the model request after the call lacks the tool's real output %q:\n%s", "proof "+nonce, trim(turns[1], 4000))
	}
	// The lifecycle's tools reached the model as the namespace Codex makes of an MCP server.
	if !bytes.Contains(turns[0], []byte(`"mcp__lifecycle"`)) {
		t.Errorf("the first model request does not offer the lifecycle's tools as namespace mcp__lifecycle:\n%s", trim(turns[0], 4000))
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("the run hit the test's deadline")
	}
}

func trim(b []byte, n int) []byte {
	if len(b) > n {
		return append(b[:n:n], "..."...)
	}
	return b
}
