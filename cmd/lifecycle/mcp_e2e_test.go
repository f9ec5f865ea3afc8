package main

// The MCP front door end to end: `lifecycle serve` in process, driven over
// real HTTP by the official Go SDK's client (and, where the SDK cannot be
// made to misbehave — resending a request id — by raw JSON-RPC).

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/mcpgateway"
)

// bearer adds a token to every request of an HTTP client.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// mcpClient is a connected Go SDK client and what the server sent it.
type mcpClient struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	progress []string
	changed  chan struct{}
}

func (c *mcpClient) progressMessages() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.progress...)
}

// connectMCP connects the Go SDK's client to serve's /mcp with token.
func (s *serveStack) connectMCP(t *testing.T, token string) *mcpClient {
	t.Helper()
	c := &mcpClient{changed: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: "lifecycle-e2e", Version: "1"}, &mcp.ClientOptions{
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.base + mcpgateway.Path,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", mcpgateway.Path, err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// callTool calls a tool and fails the test on a protocol error.
func (c *mcpClient) callTool(t *testing.T, ctx context.Context, name string, args map[string]any, progressToken any) *mcp.CallToolResult {
	t.Helper()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if progressToken != nil {
		params.SetProgressToken(progressToken)
	}
	res, err := c.cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// pendingApproval waits for the session's one pending approval.
func (s *serveStack) pendingApproval(t *testing.T) httpapi.ApprovalView {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		var list struct {
			Approvals []httpapi.ApprovalView `json:"approvals"`
		}
		if _, err := s.do("GET", "/v1/sessions/"+string(s.session)+"/approvals", s.human, nil, &list, nil); err != nil {
			t.Fatal(err)
		}
		if len(list.Approvals) == 1 {
			return list.Approvals[0]
		}
		if len(list.Approvals) > 1 || time.Now().After(deadline) {
			t.Fatalf("want one pending approval, have %d", len(list.Approvals))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *serveStack) decide(t *testing.T, ap httpapi.ApprovalView, decision string) {
	t.Helper()
	if _, err := s.do("POST", "/v1/approvals/"+string(ap.ApprovalID), s.human,
		map[string]any{"decision": decision, "digest": ap.ArgsDigest}, nil, nil); err != nil {
		t.Fatalf("%s: %v", decision, err)
	}
}

// recorded waits for the action's receipt.
func (s *serveStack) recorded(t *testing.T, id ids.ActionID) httpapi.ActionView {
	t.Helper()
	var v httpapi.ActionView
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := s.do("GET", "/v1/actions/"+string(id)+"?wait=5", s.human, nil, &v, nil); err != nil {
			t.Fatal(err)
		}
		if v.Receipt != nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("action %s never recorded: %+v", id, v.States)
		}
	}
}

func toolNames(t *testing.T, c *mcpClient) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lt, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range lt.Tools {
		out[tl.Name] = tl
	}
	return out
}

// TestMCPGatewayEndToEnd: list, allowed, denied, ask approved and declined
// through the API, client cancellation, list_changed after a policy PUT.
func TestMCPGatewayEndToEnd(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"v1","allow":["Bash(echo *)","Bash(date *)"],"deny":["Bash(touch *)","Write"]}`)
	agent := s.agent(t, s.session)
	c := s.connectMCP(t, agent)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	t.Run("list is the visible tools with their schemas", func(t *testing.T) {
		tools := toolNames(t, c)
		if _, ok := tools["Write"]; ok {
			t.Errorf("Write is denied as a whole tool and still listed")
		}
		for _, name := range []string{"Bash", "Read", "Edit"} {
			tl := tools[name]
			if tl == nil {
				t.Fatalf("%s not listed: %v", name, tools)
			}
			schema, _ := json.Marshal(tl.InputSchema)
			if !strings.Contains(string(schema), `"required"`) {
				t.Errorf("%s lists no contract schema: %s", name, schema)
			}
		}
		schema, _ := json.Marshal(tools["Bash"].InputSchema)
		if !strings.Contains(string(schema), `"command"`) {
			t.Errorf("Bash schema %s does not name command", schema)
		}
	})

	t.Run("allowed call returns the receipt's output", func(t *testing.T) {
		res := c.callTool(t, ctx, "Bash", map[string]any{"command": "echo hello-mcp"}, nil)
		if res.IsError || strings.TrimSpace(resultText(res)) != "hello-mcp" {
			t.Fatalf("allowed call: isError=%v %q", res.IsError, resultText(res))
		}
		if id, _ := res.Meta[mcpgateway.MetaActionID].(string); !strings.HasPrefix(id, "act_") {
			t.Errorf("result names no action: %v", res.Meta)
		}
	})

	t.Run("denied call is an isError result naming the restriction", func(t *testing.T) {
		res := c.callTool(t, ctx, "Bash", map[string]any{"command": "touch denied.txt"}, nil)
		text := resultText(res)
		if !res.IsError || !strings.Contains(text, "Denied") || !strings.Contains(text, "Bash(touch *)") || !strings.Contains(text, "Resolution:") {
			t.Fatalf("denied call: isError=%v %q", res.IsError, text)
		}
		if s.exists(t, "denied.txt") {
			t.Fatal("a denied command ran")
		}
		// A tool the policy hides is still the lifecycle's to refuse.
		res = c.callTool(t, ctx, "Write", map[string]any{"file_path": s.path("w.txt"), "content": "x"}, nil)
		if !res.IsError || !strings.Contains(resultText(res), "Denied") {
			t.Fatalf("hidden tool: isError=%v %q", res.IsError, resultText(res))
		}
		// A tool the catalog does not have at all is refused at once: the
		// default policy would otherwise ask a person about a call of
		// nothing.
		res = c.callTool(t, ctx, "test_simple_text", map[string]any{}, nil)
		if text := resultText(res); !res.IsError || !strings.Contains(text, "Unknown tool") || res.Meta[mcpgateway.MetaActionID] != nil {
			t.Fatalf("unknown tool: isError=%v %q meta %v", res.IsError, text, res.Meta)
		}
	})

	ask := func(t *testing.T, file string) (chan *mcp.CallToolResult, context.CancelFunc) {
		cctx, ccancel := context.WithCancel(ctx)
		out := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := c.cs.CallTool(cctx, func() *mcp.CallToolParams {
				p := &mcp.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "printf asked > " + file}}
				p.SetProgressToken("progress-" + file)
				return p
			}())
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "protocol error: " + err.Error()}}}
			}
			out <- res
		}()
		return out, ccancel
	}

	t.Run("ask approved through the API", func(t *testing.T) {
		out, ccancel := ask(t, "approved.txt")
		defer ccancel()
		ap := s.pendingApproval(t)
		// The held call reports where it waits.
		for deadline := time.Now().Add(30 * time.Second); ; {
			if msgs := c.progressMessages(); len(msgs) > 0 && strings.Contains(strings.Join(msgs, "\n"), string(ap.ApprovalID)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no progress naming %s: %q", ap.ApprovalID, c.progressMessages())
			}
			time.Sleep(50 * time.Millisecond)
		}
		select {
		case res := <-out:
			t.Fatalf("the call returned before a human decided: %q", resultText(res))
		default:
		}
		s.decide(t, ap, "approve")
		res := <-out
		if res.IsError {
			t.Fatalf("approved call: %q", resultText(res))
		}
		if b, err := os.ReadFile(s.path("approved.txt")); err != nil || string(b) != "asked" {
			t.Fatalf("approved command did not run: %q %v", b, err)
		}
	})

	t.Run("ask declined", func(t *testing.T) {
		out, ccancel := ask(t, "declined.txt")
		defer ccancel()
		s.decide(t, s.pendingApproval(t), "decline")
		res := <-out
		if !res.IsError || !strings.Contains(resultText(res), "declined") {
			t.Fatalf("declined call: isError=%v %q", res.IsError, resultText(res))
		}
		if s.exists(t, "declined.txt") {
			t.Fatal("a declined command ran")
		}
	})

	t.Run("client cancellation cancels the approval and nothing runs", func(t *testing.T) {
		out, ccancel := ask(t, "cancelled.txt")
		ap := s.pendingApproval(t)
		ccancel()
		<-out
		v := s.recorded(t, ap.ActionID)
		if v.Approval == nil || v.Approval.Status != "cancelled" || v.Receipt.Outcome != lifecycle.OutcomeNotStarted {
			t.Fatalf("after cancel: approval %+v outcome %s", v.Approval, v.Receipt.Outcome)
		}
		if s.exists(t, "cancelled.txt") {
			t.Fatal("a cancelled command ran")
		}
	})

	t.Run("closing the MCP session cancels its held call", func(t *testing.T) {
		// A client that ends its session while a call is held (the DELETE
		// Codex and Claude Code send on exit; the Go SDK's Close would wait
		// for the call first).
		c2 := s.connectMCP(t, agent)
		cctx, ccancel := context.WithCancel(ctx)
		defer ccancel()
		go c2.cs.CallTool(cctx, &mcp.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "printf x > closed.txt"}})
		ap := s.pendingApproval(t)
		req, _ := http.NewRequest("DELETE", s.base+mcpgateway.Path, nil)
		req.Header.Set("Authorization", "Bearer "+agent)
		req.Header.Set("Mcp-Session-Id", c2.cs.ID())
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		v := s.recorded(t, ap.ActionID)
		if v.Approval == nil || v.Approval.Status != "cancelled" || v.Receipt.Outcome != lifecycle.OutcomeNotStarted || s.exists(t, "closed.txt") {
			t.Fatalf("after the session closed: approval %+v outcome %s", v.Approval, v.Receipt.Outcome)
		}
	})

	t.Run("a policy PUT sends list_changed", func(t *testing.T) {
		for len(c.changed) > 0 {
			<-c.changed
		}
		s.setPolicy(t, `{"version":"v2","allow":["Bash(echo *)"],"deny":["Write","Edit"]}`)
		select {
		case <-c.changed:
		case <-time.After(30 * time.Second):
			t.Fatal("no notifications/tools/list_changed after the policy changed")
		}
		tools := toolNames(t, c)
		if _, ok := tools["Edit"]; ok {
			t.Fatalf("Edit still listed after its deny: %v", tools)
		}
		if _, ok := tools["Bash"]; !ok {
			t.Fatalf("Bash gone: %v", tools)
		}
	})
}

// TestMCPRetrySameRequestIDRunsOnce resends one tools/call (same MCP
// session, same JSON-RPC id) as a client retrying after a lost response
// would: both answers are the one action's, and the tool ran once.
func TestMCPRetrySameRequestIDRunsOnce(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"v1","allow":["Bash(date *)"]}`)
	agent := s.agent(t, s.session)
	post := func(session string, msg string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", s.base+mcpgateway.Path, strings.NewReader(msg))
		req.Header.Set("Authorization", "Bearer "+agent)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := `{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"Bash","arguments":{"command":"date +%s%N"}}}`
	results := make([]struct{ action, text string }, 2)
	for i := range results {
		_, body := post(session, call)
		// An SSE stream or a JSON body: find the response line.
		var msg struct {
			Result struct {
				Meta    map[string]any `json:"_meta"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		for _, line := range strings.Split(body, "\n") {
			line = strings.TrimPrefix(line, "data: ")
			if strings.Contains(line, `"result"`) && json.Unmarshal([]byte(line), &msg) == nil {
				break
			}
		}
		if len(msg.Result.Content) == 0 || msg.Result.IsError {
			t.Fatalf("call %d: %s", i, body)
		}
		results[i].action, _ = msg.Result.Meta[mcpgateway.MetaActionID].(string)
		results[i].text = msg.Result.Content[0].Text
	}
	if results[0].action == "" || results[0] != results[1] {
		t.Fatalf("the retry was not the same call: %+v", results)
	}
	var v httpapi.ActionView
	if _, err := s.do("GET", "/v1/actions/"+results[0].action, agent, nil, &v, nil); err != nil {
		t.Fatal(err)
	}
	// One action, one receipt: the retry's output is the first run's.
	if v.Receipt == nil || strings.TrimSpace(v.Receipt.Output) != strings.TrimSpace(results[1].text) {
		t.Fatalf("the retry's output %q is not the receipt's %+v", results[1].text, v.Receipt)
	}
	// Another request id is another call.
	_, body = post(session, strings.Replace(call, "call-7", "call-8", 1))
	if strings.Contains(body, results[0].action) {
		t.Fatalf("a new request id reached the old action: %s", body)
	}
}

// TestMCPAuth: no token and an invalid token are 401 as on /v1; a human
// token is refused (an MCP connection is the agent's).
func TestMCPAuth(t *testing.T) {
	s := startServeStack(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"invalid token", "not-a-token", http.StatusUnauthorized},
		{"human token", s.human, http.StatusForbidden},
		{"agent token", s.agent(t, s.session), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", s.base+mcpgateway.Path, strings.NewReader(init))
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			if tc.want == http.StatusUnauthorized && (resp.Header.Get("WWW-Authenticate") == "" || !strings.Contains(string(b), `"unauthenticated"`)) {
				t.Fatalf("401 without the API's challenge and body: %v %s", resp.Header, b)
			}
		})
	}
}

// startServeIn starts serve over given directories; stop ends it (orderly)
// and waits, so a test can start it again over the same state.
func startServeIn(t *testing.T, stateDir, ws string) (s *serveStack, stop func()) {
	t.Helper()
	s = &serveStack{stateDir: stateDir, workspace: ws, session: "ses_e2e", client: &http.Client{Timeout: 60 * time.Second}}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveOptions{addr: "127.0.0.1:0", stateDir: stateDir, workspace: ws, session: string(s.session),
			restartWindow: "-1", logLevel: "error", sweep: time.Minute}, pw)
		pw.Close()
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	api := regexp.MustCompile(`API\s+(http://\S+)/v1`)
	human := regexp.MustCompile(`Human token\s+(\S+)`)
	sc := bufio.NewScanner(pr)
	for sc.Scan() && (s.base == "" || s.human == "") {
		if m := api.FindStringSubmatch(sc.Text()); m != nil {
			s.base = m[1]
		}
		if m := human.FindStringSubmatch(sc.Text()); m != nil {
			s.human = m[1]
		}
	}
	if s.base == "" || s.human == "" {
		t.Fatal("serve did not print its API address and human token")
	}
	go io.Copy(io.Discard, pr)
	keys, err := auth.LoadOrCreateKeys(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if s.issuer, err = auth.NewIssuer(keys); err != nil {
		t.Fatal(err)
	}
	return s, stop
}

// TestMCPHeldCallAcrossServeRestart: serve stops while a call waits for a
// human; the client is told, the approval stays pending, and after the
// restart a human's approval runs the action once.
func TestMCPHeldCallAcrossServeRestart(t *testing.T) {
	dir := t.TempDir()
	stateDir, ws := filepath.Join(dir, "state"), filepath.Join(dir, "ws")
	s, stop := startServeIn(t, stateDir, ws)
	c := s.connectMCP(t, s.agent(t, s.session))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "printf once >> restarted.txt"}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "protocol error: " + err.Error()}}}
		}
		out <- res
	}()
	ap := s.pendingApproval(t)
	stop()
	select {
	case res := <-out:
		// The answer says the server is stopping; the stop may also cut
		// the stream first (a protocol error). Either way nothing is
		// cancelled: that is what the restart below checks.
		text := resultText(res)
		if !res.IsError || !(strings.Contains(text, "stopping") && strings.Contains(text, string(ap.ActionID)) || strings.Contains(text, "protocol error")) {
			t.Fatalf("the held call's answer at the stop: %q", text)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held call was not answered when serve stopped")
	}
	s2, _ := startServeIn(t, stateDir, ws)
	if again := s2.pendingApproval(t); again.ApprovalID != ap.ApprovalID {
		t.Fatalf("after the restart the pending approval is %s, was %s", again.ApprovalID, ap.ApprovalID)
	}
	s2.decide(t, ap, "approve")
	if v := s2.recorded(t, ap.ActionID); v.Receipt.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("after the restart: %+v", v.Receipt)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "restarted.txt")); err != nil || string(b) != "once" {
		t.Fatalf("the approved action ran %q (%v)", b, err)
	}
}
