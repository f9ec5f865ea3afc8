package main

// The downstream proxy test: a real `lifecycle serve` with the reference
// MCP server, @modelcontextprotocol/server-everything (npm, pinned in the
// Makefile, installed under .tools/mcp-everything), configured over stdio.
// Its tools reach the agent through GET /v1/tools and every call goes
// through the lifecycle: rules, approvals, receipts.

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// everythingServer is the installed server-everything binary. `make unit`
// installs it and names it in LIFECYCLE_MCP_EVERYTHING (then it must be
// there); a plain `go test` uses the same install if present and skips
// otherwise.
func everythingServer(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LIFECYCLE_MCP_EVERYTHING"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("LIFECYCLE_MCP_EVERYTHING: %v (make mcp-everything installs it)", err)
		}
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.mod above the test; run make mcp-everything")
		}
		dir = parent
	}
	p := filepath.Join(dir, ".tools", "mcp-everything", "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("server-everything is not installed (%v): run `make mcp-everything` (make unit does)", err)
	}
	return p
}

func writeServers(t *testing.T, doc any) string {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "mcp-servers.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// visibleTools is GET /v1/tools for the stack's session, by name.
func visibleTools(t *testing.T, s *serveStack, token string) map[string]httpapi.Tool {
	t.Helper()
	var tl struct {
		PolicyVersion string         `json:"policy_version"`
		Tools         []httpapi.Tool `json:"tools"`
	}
	if _, err := s.do("GET", "/v1/tools?session_id="+string(s.session), token, nil, &tl, nil); err != nil {
		t.Fatal(err)
	}
	out := map[string]httpapi.Tool{}
	for _, tool := range tl.Tools {
		out[tool.Name] = tool
	}
	return out
}

func TestDownstreamMCPServerEverything(t *testing.T) {
	bin := everythingServer(t)
	wire := filepath.Join(t.TempDir(), "watched-requests.jsonl")
	cfg := writeServers(t, map[string]any{"servers": map[string]any{
		"everything": map[string]any{"command": bin, "args": []string{"stdio"}},
		// The same server with a 1 s call deadline.
		"hasty": map[string]any{"command": bin, "args": []string{"stdio"}, "timeout_seconds": 1},
		// A server that cannot start: serve runs without its tools.
		"broken": map[string]any{"command": filepath.Join(t.TempDir(), "no-such-server")},
		// The same server behind tee: the test reads every request it got.
		"watched": map[string]any{"command": "sh", "args": []string{"-c", `tee -a "$MCP_WIRE" | exec "$0" stdio`, bin},
			"env": map[string]string{"MCP_WIRE": wire}},
	}})
	s := startServeStack(t, func(o *serveOptions) { o.mcpServers = cfg })
	agent := s.agent(t, s.session)

	// call submits one call of a downstream tool and waits for it to settle.
	call := func(t *testing.T, tool string, args any) httpapi.ActionView {
		t.Helper()
		id, err := s.submit(s.session, agent, tool, args)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.settled(agent, id, 90*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	t.Run("the catalog lists the downstream tools with their schemas", func(t *testing.T) {
		s.setPolicy(t, `{"version":"allow-1","allow":["mcp__everything"]}`)
		tools := visibleTools(t, s, agent)
		echo, ok := tools["mcp__everything__echo"]
		if !ok {
			t.Fatalf("mcp__everything__echo not listed: %v", slices.Sorted(maps.Keys(tools)))
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(echo.InputSchema, &schema); err != nil || schema.Type != "object" || schema.Properties["message"] == nil ||
			len(schema.Required) != 1 || schema.Required[0] != "message" {
			t.Fatalf("echo's input schema %s: %v", echo.InputSchema, err)
		}
		if !strings.Contains(echo.Description, "Echoes back") {
			t.Fatalf("echo's description %q", echo.Description)
		}
		if _, ok := tools["mcp__everything__get-sum"]; !ok {
			t.Fatalf("mcp__everything__get-sum not listed: %v", slices.Sorted(maps.Keys(tools)))
		}
		if _, ok := tools["Bash"]; !ok {
			t.Fatal("the built-in tools are still listed")
		}
		for name := range tools {
			if strings.HasPrefix(name, "mcp__broken__") {
				t.Fatalf("a tool of the server that did not start is listed: %s", name)
			}
		}
	})

	t.Run("allowed: the echoed text is the receipt", func(t *testing.T) {
		s.setPolicy(t, `{"version":"allow-2","allow":["mcp__everything__echo"]}`)
		v := call(t, "mcp__everything__echo", map[string]any{"message": "hello through the lifecycle"})
		if v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeSucceeded || v.Receipt.Output != "Echo: hello through the lifecycle" {
			t.Fatalf("receipt %+v", v.Receipt)
		}
		if v.Start == nil || v.Start.Executor != "mcp" || v.States.Delivery != lifecycle.DeliveryProjected {
			t.Fatalf("start %+v states %+v", v.Start, v.States)
		}
	})

	// Issue 13: a downstream tool's arguments are checked against its
	// input schema when the call is prepared, as a built-in tool's are
	// against its contract: a bad call ends not_started, invalid_arguments,
	// the field named, no start evidence, and never reaches the server.
	t.Run("arguments the input schema refuses never reach the server", func(t *testing.T) {
		s.setPolicy(t, `{"version":"allow-5","allow":["mcp__watched"]}`)
		for _, tc := range []struct {
			name, tool string
			args       map[string]any
			field      string // the field named
			problem    string // in its problem
		}{
			{"a required field missing", "mcp__watched__echo", map[string]any{"text": "the wrong field"}, "message", "required"},
			{"a field of the wrong type", "mcp__watched__echo", map[string]any{"message": 42}, "message", `want "string"`},
			{"a number given as a string", "mcp__watched__get-sum", map[string]any{"a": "one", "b": 2}, "a", `want "number"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				v := call(t, tc.tool, tc.args)
				rc := v.Receipt
				if rc == nil || v.States.Outcome != lifecycle.OutcomeNotStarted || v.States.Started || v.Start != nil || rc.ErrorCode != "invalid_arguments" {
					t.Fatalf("states %+v start %+v receipt %+v", v.States, v.Start, rc)
				}
				if v.Decision == nil || v.Decision.Reason.Code != "invalid_arguments" {
					t.Fatalf("decision %+v", v.Decision)
				}
				named := false
				for _, p := range rc.Validation {
					named = named || (p.Field == tc.field && strings.Contains(p.Problem, tc.problem))
				}
				if !named {
					t.Fatalf("validation %+v does not name %s (%s)", rc.Validation, tc.field, tc.problem)
				}
			})
		}
		if n := strings.Count(readFile(t, wire), `"method":"tools/call"`); n != 0 {
			t.Fatalf("the server got %d tools/call requests for calls its schema refuses", n)
		}
		// The same server answers a valid call, and the wire shows it.
		v := call(t, "mcp__watched__get-sum", map[string]any{"a": 2, "b": 3})
		if v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeSucceeded || !strings.Contains(v.Receipt.Output, "5") {
			t.Fatalf("a valid call: receipt %+v", v.Receipt)
		}
		if n := strings.Count(readFile(t, wire), `"method":"tools/call"`); n != 1 {
			t.Fatalf("the server got %d tools/call requests, want the valid one", n)
		}
	})

	t.Run("no response within the deadline is unknown, for a person to reconcile", func(t *testing.T) {
		s.setPolicy(t, `{"version":"allow-4","allow":["mcp__hasty"]}`)
		v := call(t, "mcp__hasty__trigger-long-running-operation", map[string]any{"duration": 5, "steps": 1})
		if v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeUnknown || v.Start == nil ||
			!strings.Contains(v.Receipt.Error, "no response within 1s") || v.Receipt.Reconciliation == "" {
			t.Fatalf("receipt %+v start %+v", v.Receipt, v.Start)
		}
	})

	t.Run("ask: the call waits for a human, then runs", func(t *testing.T) {
		s.setPolicy(t, `{"version":"ask-1","ask":["mcp__everything__echo"]}`)
		v := call(t, "mcp__everything__echo", map[string]any{"message": "approved words"})
		if v.States.Permission != lifecycle.PermissionAsk || v.Approval == nil || v.Start != nil || v.Receipt != nil {
			t.Fatalf("before approval: states %+v approval %+v start %+v receipt %+v", v.States, v.Approval, v.Start, v.Receipt)
		}
		if _, err := s.do("POST", "/v1/approvals/"+string(v.Approval.ApprovalID), s.human,
			httpapi.DecisionBody{Decision: "approve", Digest: v.ArgsDigest}, nil, nil); err != nil {
			t.Fatal(err)
		}
		v, err := s.settled(agent, v.ActionID, 90*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeSucceeded || v.Receipt.Output != "Echo: approved words" {
			t.Fatalf("after approval: receipt %+v", v.Receipt)
		}
	})

	t.Run("deny: the tool leaves the catalog and a call is refused", func(t *testing.T) {
		s.setPolicy(t, `{"version":"deny-1","allow":["mcp__everything"],"deny":["mcp__everything__echo"]}`)
		tools := visibleTools(t, s, agent)
		if _, ok := tools["mcp__everything__echo"]; ok {
			t.Fatal("a denied tool is still listed")
		}
		if _, ok := tools["mcp__everything__get-sum"]; !ok {
			t.Fatal("the deny of one tool removed the server's other tools")
		}
		v := call(t, "mcp__everything__echo", map[string]any{"message": "never sent"})
		if v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeNotStarted || v.Start != nil ||
			!strings.HasPrefix(v.Receipt.ErrorCode, "permission_denied") {
			t.Fatalf("receipt %+v start %+v", v.Receipt, v.Start)
		}
	})

	t.Run("the servers file, which may hold credentials, is protected from the agent's tools", func(t *testing.T) {
		// (Read refuses any path outside the workspace already.)
		s.setPolicy(t, `{"version":"read-1","allow":["Bash"]}`)
		for _, command := range []string{"cat " + cfg, "cp " + cfg + " stolen.json"} {
			v := call(t, "Bash", map[string]any{"command": command})
			if v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeNotStarted || v.Start != nil ||
				!strings.Contains(v.Receipt.ErrorCode, "protected_path") {
				t.Fatalf("%s: receipt %+v", command, v.Receipt)
			}
		}
	})

	t.Run("a server that did not start: a call of its tools is not_started", func(t *testing.T) {
		if testing.Short() {
			t.Skip("the dispatch retries take about half a minute")
		}
		s.setPolicy(t, `{"version":"allow-3","allow":["mcp__broken"]}`)
		v := call(t, "mcp__broken__anything", map[string]any{})
		if v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeNotStarted || v.Start != nil ||
			!strings.Contains(v.Receipt.Error, "not reachable, nothing was sent") {
			t.Fatalf("receipt %+v start %+v", v.Receipt, v.Start)
		}
	})
}

// TestServeReportsMCPServers: a bad servers file refuses to start and
// names the server and field; a server that cannot start is in the
// banner and serve runs on.
func TestServeReportsMCPServers(t *testing.T) {
	dir := t.TempDir()
	base := serveOptions{addr: "127.0.0.1:0", stateDir: filepath.Join(dir, "state"), workspace: filepath.Join(dir, "ws"),
		session: "ses_e2e", restartWindow: "-1", logLevel: "error", sweep: time.Minute}

	bad := base
	bad.mcpServers = writeServers(t, map[string]any{"servers": map[string]any{"Tickets": map[string]any{"command": "x"}}})
	err := serve(context.Background(), bad, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--mcp-servers`) || !strings.Contains(err.Error(), `MCP server "Tickets": name`) {
		t.Fatalf("a bad servers file: %v", err)
	}

	banner := func(t *testing.T, o serveOptions) string {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- serve(ctx, o, pw)
			pw.Close()
		}()
		var lines []string
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "Stop with Ctrl-C") {
				break
			}
		}
		go io.Copy(io.Discard, pr)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve: %v", err)
		}
		return strings.Join(lines, "\n")
	}

	inside := base
	if err := os.MkdirAll(inside.workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	inside.mcpServers = filepath.Join(inside.workspace, "mcp.json")
	if err := os.WriteFile(inside.mcpServers, []byte(`{"servers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if text := banner(t, inside); !strings.Contains(text, "WARNING: the MCP servers file "+inside.mcpServers+" is inside the workspace") {
		t.Fatalf("no warning for a servers file in the workspace:\n%s", text)
	}

	down := base
	down.mcpServers = writeServers(t, map[string]any{"servers": map[string]any{"broken": map[string]any{
		"command": "sh", "args": []string{"-c", "echo 'no API key configured' >&2; exit 2"}}}})
	text := banner(t, down)
	if !strings.Contains(text, "MCP server    broken (stdio): NOT AVAILABLE") || !strings.Contains(text, "no API key configured") {
		t.Fatalf("banner does not report the server:\n%s", text)
	}
}

// TestDownstreamCallInterruptedByRestart: serve stops while a downstream
// call runs; the next serve on the same state never calls it again and
// records unknown (start evidence, no result), for a person to reconcile.
func TestDownstreamCallInterruptedByRestart(t *testing.T) {
	bin := everythingServer(t)
	dir := t.TempDir()
	cfg := writeServers(t, map[string]any{"servers": map[string]any{"everything": map[string]any{"command": bin}}})
	same := func(o *serveOptions) {
		o.stateDir, o.workspace, o.mcpServers = filepath.Join(dir, "state"), filepath.Join(dir, "ws"), cfg
	}
	var id ids.ActionID
	t.Run("first serve: the call starts", func(t *testing.T) {
		s := startServeStack(t, same)
		s.setPolicy(t, `{"version":"allow-1","allow":["mcp__everything"]}`)
		agent := s.agent(t, s.session)
		var err error
		if id, err = s.submit(s.session, agent, "mcp__everything__trigger-long-running-operation", map[string]any{"duration": 60, "steps": 1}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			var v httpapi.ActionView
			if _, err := s.do("GET", "/v1/actions/"+string(id), agent, nil, &v, nil); err != nil {
				t.Fatal(err)
			}
			if v.Start != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the call never started: %+v", v.States)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The subtest's end stops serve (orderly) in the middle of the call.
	})
	s := startServeStack(t, same)
	agent := s.agent(t, s.session)
	v, err := s.settled(agent, id, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeUnknown || v.Start == nil || v.Receipt.Reconciliation == "" {
		t.Fatalf("after the restart: receipt %+v start %+v", v.Receipt, v.Start)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
