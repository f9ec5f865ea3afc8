package agents

import (
	"bytes"
	"context"
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
// decision the test gives through the API with the human token.
const askPolicy = `{"version":"agents.1","ask":["Bash(printf *)"]}`

// denyPolicy refuses the same call by rule: nobody is asked.
const denyPolicy = `{"version":"agents.1","deny":["Bash(printf *)"]}`

// proofCommand prints the nonce and appends it to proof.txt in the
// workspace: its output reaches the model only if the lifecycle ran it, and
// the file counts how many times it ran.
func proofCommand(nonce string) string {
	return fmt.Sprintf("printf '%%s\\n' %s >> proof.txt && printf 'proof %%s\\n' %s", nonce, nonce)
}

// TestCodexCallsLifecycleTool: Codex CLI (the real binary, pinned in the
// Makefile) connects to serve's /mcp with an agent token and the scripted
// model makes it call the lifecycle's Bash tool. Approved through the HTTP
// API with the human token, the tool runs once and Codex hands its real
// output to the model; declined or denied, nothing runs and the model reads
// why. Either way Codex then prints the model's final message.
func TestCodexCallsLifecycleTool(t *testing.T) {
	bin := codexBinary(t)
	cases := []struct {
		name     string
		policy   string
		decision string // the person's answer through the API; "" when nobody is asked
		// wantStatus is Codex's mcp_tool_call status; wantText is in the
		// result Codex reports and in the model's next request.
		wantStatus string
		wantText   func(nonce string) string
		wantRuns   int
		stdio      bool // through `lifecycle mcp` instead of streamable HTTP
	}{
		{name: "ask approved through the API runs once", policy: askPolicy, decision: "approve",
			wantStatus: "completed", wantText: func(n string) string { return "proof " + n }, wantRuns: 1},
		{name: "ask declined through the API runs nothing", policy: askPolicy, decision: "decline",
			wantStatus: "failed", wantText: func(string) string { return "declined by human:ses_codex" }, wantRuns: 0},
		{name: "denied by rule runs nothing and says why", policy: denyPolicy,
			wantStatus: "failed", wantText: func(string) string { return "Bash(printf *)" }, wantRuns: 0},
		{name: "over stdio through lifecycle mcp, ask approved runs once", policy: askPolicy, decision: "approve", stdio: true,
			wantStatus: "completed", wantText: func(n string) string { return "proof " + n }, wantRuns: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := harness.StartServe(t, "ses_codex")
			srv.SetPolicy(t, tc.policy)
			nonce := fmt.Sprintf("codex-%d", time.Now().UnixNano())
			const final = "Done with the lifecycle's Bash tool."
			model := startModel(t, responsesTurn, responsesAPI,
				modelTurn{Namespace: "mcp__lifecycle", Tool: "Bash", Arguments: map[string]any{"command": proofCommand(nonce)}},
				modelTurn{Text: final})

			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			decided := make(chan error, 1)
			if tc.decision != "" {
				go func() {
					_, err := srv.DecideNext(ctx, tc.decision)
					decided <- err
				}()
			} else {
				decided <- nil
			}
			start := time.Now()
			token := srv.AgentToken(t)
			server := mcpServer{URL: srv.MCPURL()}
			if tc.stdio {
				server = mcpServer{LifecycleBin: srv.Bin, APIBase: srv.Base, Token: token}
			}
			run, err := runCodex(t, ctx, bin, codexConfig(model.URL, server), t.TempDir(), token,
				"Record the proof in the workspace with the lifecycle's Bash tool.")
			t.Logf("codex exec took %s", time.Since(start).Round(time.Millisecond))
			if err != nil {
				logRun(t, "codex", run.stdout, run.stderr)
				t.Fatalf("codex exec: %v", err)
			}
			if err := awaitDecision(decided); err != nil {
				logRun(t, "codex", run.stdout, run.stderr)
				t.Fatalf("%s through the API: %v", tc.decision, err)
			}
			want := tc.wantText(nonce)

			calls := run.items("mcp_tool_call")
			if len(calls) != 1 {
				logRun(t, "codex", run.stdout, run.stderr)
				t.Fatalf("codex reported %d mcp_tool_call items, want 1", len(calls))
			}
			call := calls[0].Item
			if call.Server != "lifecycle" || call.Tool != "Bash" || call.Status != tc.wantStatus {
				t.Errorf("mcp_tool_call: server %q tool %q status %q, want lifecycle Bash %s", call.Server, call.Tool, call.Status, tc.wantStatus)
			}
			if got := toolText(call.Result); !strings.Contains(got, want) {
				t.Errorf("mcp_tool_call result %q lacks %q", got, want)
			}
			if msgs := run.items("agent_message"); len(msgs) == 0 || msgs[len(msgs)-1].Item.Text != final {
				logRun(t, "codex", run.stdout, run.stderr)
				t.Errorf("codex's last agent message is not the model's final answer %q", final)
			}

			// How many times the tool really ran, in the lifecycle's workspace.
			b, err := os.ReadFile(filepath.Join(srv.Workspace, "proof.txt"))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if got := strings.Count(string(b), nonce); got != tc.wantRuns {
				t.Errorf("the tool ran %d times (proof.txt), want %d", got, tc.wantRuns)
			}

			// The model read the real result: the request after the call carries it.
			turns := model.Turns()
			if len(turns) != 2 {
				t.Fatalf("the model got %d requests, want 2 (the call, then the answer after its result)", len(turns))
			}
			if bytes.Contains(turns[0], []byte(want)) {
				t.Errorf("the first model request already holds %q: the assertion below would prove nothing", want)
			}
			if !bytes.Contains(turns[1], []byte("function_call_output")) || !bytes.Contains(turns[1], []byte(jsonText(want))) {
				t.Errorf("the model request after the call lacks the tool's result %q:\n%s", want, trim(turns[1], 4000))
			}
			// The lifecycle's tools reached the model as the namespace Codex makes of an MCP server.
			if !bytes.Contains(turns[0], []byte(`"mcp__lifecycle"`)) {
				t.Errorf("the first model request does not offer the lifecycle's tools as namespace mcp__lifecycle:\n%s", trim(turns[0], 4000))
			}
		})
	}
}

// jsonText is s as it appears inside a JSON string (escaped), without the quotes.
func jsonText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func trim(b []byte, n int) []byte {
	if len(b) > n {
		return append(b[:n:n], "..."...)
	}
	return b
}
