package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/httpapi/apigw"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// byTool decides by tool name.
type byTool map[string]lifecycle.Permission

func (d byTool) Decide(_ context.Context, a actionflow.Action) (actionflow.Decision, error) {
	p, ok := d[a.Tool]
	if !ok {
		p = lifecycle.PermissionDeny
	}
	return actionflow.Decision{Permission: p, PolicyVersion: "v1", Reason: actionflow.Reason{Source: "deny_rule", Code: string(p), Rule: a.Tool},
		Resolution: "the owner can change the policy"}, nil
}

func (d byTool) Revalidate(_ context.Context, _ actionflow.Action, prior actionflow.Decision, _ actionflow.Approval) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow, PolicyVersion: prior.PolicyVersion, Reason: actionflow.Reason{Source: "approval", Code: "approved"}}, nil
}

func (byTool) ApprovalCompleted(context.Context, actionflow.Action, actionflow.Approval) error {
	return nil
}

type doneExecutor struct{}

func (doneExecutor) Execute(context.Context, actionflow.Task) (actionflow.ToolResult, error) {
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "done"}, nil
}

type catalog struct{}

func (catalog) VisibleTools(context.Context, ids.SessionID) (httpapi.ToolList, error) {
	return httpapi.ToolList{PolicyVersion: "v1", Tools: []httpapi.Tool{
		{Name: "noop", Description: "does nothing", InputSchema: json.RawMessage(`{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}`)}}}, nil
}

// mcpEvent is the fixture with another body, method or claims.
func mcpEvent(t *testing.T, method, body string, claims map[string]string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", "apigateway", "mcp-tools-call.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if method != "" {
		ev.RequestContext.HTTP.Method = method
	}
	if body != "" {
		ev.Body = body
	}
	if claims != nil {
		ev.RequestContext.Authorizer.JWT.Claims = claims
	}
	return ev
}

// TestMCPThroughAPIGatewayEvents drives the api function's handler, /mcp
// in stateless mode, with API Gateway HTTP API (v2) events over the real
// embedded lifecycle.
func TestMCPThroughAPIGatewayEvents(t *testing.T) {
	dir := t.TempDir()
	sq, err := sqlitestore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	es, err := embedded.Start(context.Background(), embedded.Config{StateDir: dir, NoHostWorker: true, Store: sq, Logger: quiet,
		Decider: byTool{"noop": lifecycle.PermissionAllow}, Routes: executor.Routes{"noop": "test", "forbidden": "test"},
		Executors: map[string]actionflow.Executor{"test": doneExecutor{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		es.Close(ctx)
		sq.Close()
	})
	h, err := handler(httpapi.Config{Service: es.Service, Auth: auth.GatewayClaims{}, Tools: catalog{}, Logger: quiet,
		DisableStreaming: true, NoUI: true})
	if err != nil {
		t.Fatal(err)
	}
	lambdaHandler := apigw.Handler{H: h}
	agent := map[string]string{"sub": "agent-7", "role": "agent", "sid": "ses_demo"}
	for _, tc := range []struct {
		name, method, body string
		claims             map[string]string
		status             int
		want               []string // substrings of the body
	}{
		{name: "initialize", body: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e","version":"1"}}}`,
			status: http.StatusOK, want: []string{`"protocolVersion":"2025-06-18"`, `"listChanged":true`}},
		{name: "tools/list", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, status: http.StatusOK,
			want: []string{`"name":"noop"`, `"required":["path"]`}},
		{name: "allowed call (the fixture)", status: http.StatusOK, want: []string{`"text":"done"`, `"openprogram/outcome":"succeeded"`}},
		{name: "denied call", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"forbidden","arguments":{}}}`,
			status: http.StatusOK, want: []string{`"isError":true`, `Denied by the lifecycle`, `rule forbidden`, `Resolution: the owner can change the policy`}},
		{name: "no verified claims", claims: map[string]string{}, status: http.StatusUnauthorized, want: []string{`"unauthenticated"`}},
		{name: "human token", claims: map[string]string{"sub": "h", "role": "human", "sid": "ses_demo"}, status: http.StatusForbidden},
		{name: "no stream in stateless mode", method: "GET", status: http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims := tc.claims
			if claims == nil {
				claims = agent
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := lambdaHandler.Handle(ctx, mcpEvent(t, tc.method, tc.body, claims))
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, res.Body)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Body, w) {
					t.Errorf("body lacks %s: %s", w, res.Body)
				}
			}
			if res.StatusCode == http.StatusOK && res.Headers["Mcp-Session-Id"] != "" {
				t.Errorf("a stateless answer carries a session id: %v", res.Headers)
			}
		})
	}
}

// policyEvent is the put-policy fixture with another policy document.
func policyEvent(t *testing.T, policy string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", "apigateway", "put-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if policy != "" {
		ev.Body = `{"expected_version":0,"policy":` + policy + `}`
	}
	return ev
}

// TestPolicySandboxPathsThroughAPIGatewayEvents: the api function refuses
// a policy whose sandbox opens a credential store under the host workers'
// home as `lifecycle serve` does (400 naming the setting, the path and
// the protected path), with the same validator; nothing is stored.
func TestPolicySandboxPathsThroughAPIGatewayEvents(t *testing.T) {
	for _, tc := range []struct {
		name, home, policy string
		status             int
		want               []string
	}{
		{name: "a policy with a sandbox path", home: "/srv/agent",
			policy: `{"version":"p1","allow":["Bash(make)"],"sandbox":{"writable":["/srv/agent/build"]}}`, status: http.StatusOK, want: []string{`"p1"`}},
		{name: "writable parent of the host home", home: "/srv/agent",
			policy: `{"version":"p1","allow":["Bash(make)"],"sandbox":{"writable":["/srv"]}}`, status: http.StatusBadRequest,
			want: []string{`"field":"policy.sandbox.writable[0]"`, `\"/srv\" opens the protected path /srv/agent/.ssh`}},
		{name: "writable host home for one rule", home: "/srv/agent",
			policy: `{"version":"p1","allow":["Bash(make)"],"sandbox":{"rules":{"Bash(make)":{"writable":["/srv/agent"]}}}}`, status: http.StatusBadRequest,
			want: []string{`"field":"policy.sandbox.rules[\"Bash(make)\"].writable[0]"`, `opens the protected path /srv/agent/.ssh`}},
		{name: "read-only credential store of one tool", home: "/srv/agent",
			policy: `{"version":"p1","sandbox":{"tools":{"Bash":{"readOnly":["/srv/agent/.kube"]}}}}`, status: http.StatusBadRequest,
			want: []string{`"field":"policy.sandbox.tools[\"Bash\"].readOnly[0]"`, `credential store ~/.kube`}},
		{name: "a path beside the home", home: "/srv/agent",
			policy: `{"version":"p1","sandbox":{"writable":["/srv/cache"],"readOnly":["/srv"]}}`, status: http.StatusOK},
		{name: "home unknown: stores by name still refused", home: "",
			policy: `{"version":"p1","sandbox":{"readOnly":["/srv/agent/.ssh"]}}`, status: http.StatusBadRequest,
			want: []string{`"field":"policy.sandbox.readOnly[0]"`, `credential store ~/.ssh`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sq, err := sqlitestore.Open(filepath.Join(dir, "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer sq.Close()
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			es, err := embedded.Start(context.Background(), embedded.Config{StateDir: dir, NoHostWorker: true, Store: sq, Logger: quiet,
				Decider: byTool{}, Routes: executor.Routes{}, Executors: map[string]actionflow.Executor{}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				es.Close(ctx)
			}()
			eng, err := permission.NewEngine(permission.Config{})
			if err != nil {
				t.Fatal(err)
			}
			policies := policyStore(sq, eng, tc.home)
			h, err := handler(httpapi.Config{Service: es.Service, Auth: auth.GatewayClaims{}, Policies: policies, Tools: catalog{}, Logger: quiet,
				DisableStreaming: true, NoUI: true})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := apigw.Handler{H: h}.Handle(ctx, policyEvent(t, tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, res.Body)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Body, w) {
					t.Errorf("body lacks %s: %s", w, res.Body)
				}
			}
			// Stored when accepted; nothing half-written when refused.
			got, err := apigw.Handler{H: h}.Handle(ctx, getPolicy(policyEvent(t, "")))
			if err != nil {
				t.Fatal(err)
			}
			if stored := strings.Contains(got.Body, `"policy_version":"p1"`); stored != (tc.status == http.StatusOK) {
				t.Errorf("stored %v after status %d: %s", stored, tc.status, got.Body)
			}
		})
	}
}

// getPolicy turns the put-policy event into a GET of the same policy.
func getPolicy(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	ev.RequestContext.HTTP.Method = http.MethodGet
	ev.RouteKey = "GET /v1/sessions/{session_id}/policy"
	ev.RequestContext.RouteKey = ev.RouteKey
	ev.Body = ""
	return ev
}

func TestHostHome(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{{"unset", "", true}, {"absolute", "/home/dev", true}, {"relative", "dev", false}, {"unclean", "/home/dev/", false}, {"root", "/", false}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hostHome(tc.in)
			if (err == nil) != tc.ok || (tc.ok && got != tc.in) {
				t.Fatalf("hostHome(%q) = %q, %v", tc.in, got, err)
			}
		})
	}
}
