package agents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/tests/internal/harness"
)

// codexConfig is $CODEX_HOME/config.toml for a run against the scripted
// model and the lifecycle's /mcp, with nothing that reaches past loopback:
// no update check, no plugins (they fetch from GitHub), no analytics.
// The MCP server is reached over streamable HTTP (mcpURL set) or over stdio
// through `lifecycle mcp` (lifecycleBin and apiBase set), with the agent
// token from the environment either way.
func codexConfig(modelURL string, server mcpServer) string {
	return fmt.Sprintf(`model = "scripted"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[features]
plugins = false

[analytics]
enabled = false

[model_providers.scripted]
name = "scripted"
base_url = %q
env_key = "SCRIPTED_MODEL_KEY"
wire_api = "responses"

[mcp_servers.lifecycle]
%srequired = true
startup_timeout_sec = 60
tool_timeout_sec = 600
`, modelURL+"/v1", server.codexLines())
}

// mcpServer is how an agent reaches the lifecycle: its /mcp URL, or the
// command `lifecycle mcp --api <base>` over stdio.
type mcpServer struct {
	URL          string
	LifecycleBin string
	APIBase      string
	Token        string
}

func (s mcpServer) codexLines() string {
	if s.URL != "" {
		return fmt.Sprintf("url = %q\nbearer_token_env_var = \"LIFECYCLE_TOKEN\"\n", s.URL)
	}
	return fmt.Sprintf("command = %q\nargs = [\"mcp\", \"--api\", %q]\nenv = { LIFECYCLE_TOKEN = %q }\n", s.LifecycleBin, s.APIBase, s.Token)
}

// codexEvent is one line of `codex exec --json`.
type codexEvent struct {
	Type string `json:"type"`
	Item struct {
		Type      string          `json:"type"`
		Server    string          `json:"server"`
		Tool      string          `json:"tool"`
		Status    string          `json:"status"`
		Text      string          `json:"text"`
		Arguments json.RawMessage `json:"arguments"`
		Result    json.RawMessage `json:"result"`
		Error     json.RawMessage `json:"error"`
	} `json:"item"`
}

// codexRun is what one `codex exec` did.
type codexRun struct {
	events []codexEvent
	stdout []byte
	stderr []byte
}

func (r codexRun) items(typ string) []codexEvent {
	var out []codexEvent
	for _, e := range r.events {
		if e.Type == "item.completed" && e.Item.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// runCodex runs `codex exec --json` once with a fresh CODEX_HOME and an
// environment of its own (no proxies, no keys of the machine).
func runCodex(t *testing.T, ctx context.Context, bin, config, workdir, token, prompt string) (codexRun, error) {
	t.Helper()
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--json", "-C", workdir, prompt)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + codexHome, "TMPDIR=" + os.TempDir(),
		"NO_PROXY=127.0.0.1,localhost", "SCRIPTED_MODEL_KEY=sk-scripted", "LIFECYCLE_TOKEN=" + token}
	cmd.Stdin = nil // /dev/null: codex exec otherwise waits on standard input
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	run := codexRun{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	sc := bufio.NewScanner(bytes.NewReader(run.stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e codexEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type != "" {
			run.events = append(run.events, e)
		}
	}
	return run, err
}

func codexBinary(t *testing.T) string {
	return harness.Tool(t, "mcp-clients", ".tools/codex-*/node_modules/.bin/codex")
}

func logRun(t *testing.T, name string, stdout, stderr []byte) {
	t.Helper()
	t.Logf("%s stdout:\n%s", name, stdout)
	t.Logf("%s stderr:\n%s", name, stderr)
}

// toolText is the text of an MCP tool result as an agent reports it.
func toolText(raw json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// awaitDecision is the result of the person's decision once the agent has
// ended: a call that waited for it was decided before the agent got its
// result, so a decision still missing now will not come (the agent never
// raised the ask), and waiting on would only delay the failure.
func awaitDecision(decided <-chan error) error {
	select {
	case err := <-decided:
		return err
	case <-time.After(10 * time.Second):
		return errors.New("the agent ended and no approval was pending to decide")
	}
}
