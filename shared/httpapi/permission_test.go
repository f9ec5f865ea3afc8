package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/store"
)

var catalog = []permission.ToolSpec{{Name: "Bash"}, {Name: "Read"}, {Name: "WebFetch"}}

// permissionStack wires the real permission engine: policies stored by
// the API, parsed by the engine's parser, read live by the decider and
// the tool filter.
func permissionStack(t *testing.T) *stack {
	root := t.TempDir()
	return newStackWith(t, func(st store.Store) (actionflow.Decider, func(*httpapi.Config)) {
		ps := policystore.New(st, httpapi.ValidatePermissionPolicy, policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)))
		live := policystore.Parsed[*permission.Policy]{Store: ps, Parse: permission.ParsePolicy}
		eng, err := permission.NewEngine(permission.Config{})
		if err != nil {
			t.Fatal(err)
		}
		d := &decider.Decider{Engine: eng, Policies: live, ProjectRoot: root, WorkingDir: root, HomeDir: root}
		return d, func(c *httpapi.Config) {
			c.Policies = ps
			c.Tools = httpapi.PermissionTools{Policies: live, Default: decider.DefaultPolicy(), Catalog: catalog}
		}
	})
}

func (s *stack) decided(token string, id ids.ActionID) httpapi.ActionView {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var v httpapi.ActionView
		s.do(req{method: "GET", path: "/v1/actions/" + string(id), token: token}).decode(s.t, &v)
		if v.Decision != nil {
			return v
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no decision for %s", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLivePolicyDrivesToolsAndDecisions(t *testing.T) {
	s := permissionStack(t)
	human := s.token(auth.RoleHuman, "ses_1")
	agent := s.token(auth.RoleAgent, "ses_1")
	tools := func() httpapi.ToolsResponse {
		var tl httpapi.ToolsResponse
		r := s.do(req{method: "GET", path: "/v1/tools", token: agent})
		r.decode(t, &tl)
		return tl
	}
	if tl := tools(); len(tl.Tools) != 3 || tl.PolicyVersion != "default" {
		t.Fatalf("default tools %+v", tl)
	}
	var d policystore.Document
	s.do(req{method: "GET", path: "/v1/sessions/ses_1/policy", token: agent}).decode(t, &d)
	if d.Version != 0 || !strings.Contains(string(d.Policy), `"default"`) {
		t.Fatalf("default policy %s", d.Policy)
	}
	zero, one := int64(0), int64(1)
	r := s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human, body: httpapi.PolicyBody{ExpectedVersion: &zero,
		Policy: json.RawMessage(`{"version":"p1","mode":"default","deny":["WebFetch"],"allow":["Bash(echo *)"]}`)}})
	if r.status != 200 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	if tl := tools(); len(tl.Tools) != 2 || tl.PolicyVersion != "p1" {
		t.Fatalf("tools under p1 %+v", tl)
	}
	// An invalid document is refused with its place, line and rule.
	r = s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human,
		body: "{\"expected_version\": 1, \"policy\": {\"version\": \"p2\",\n  \"deny\": [\"Bash((\"]}}"})
	e := r.errorBody(t)
	if r.status != 400 || !strings.HasPrefix(e.Field, "policy.deny") || !strings.Contains(e.Message, "line 2") {
		t.Fatalf("invalid policy: %d %s", r.status, r.body)
	}
	// Changed rules under the same version label are refused.
	r = s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human, body: httpapi.PolicyBody{ExpectedVersion: &one,
		Policy: json.RawMessage(`{"version":"p1","mode":"default"}`)}})
	if r.status != 400 || r.errorBody(t).Field != "policy.version" {
		t.Fatalf("same label: %d %s", r.status, r.body)
	}

	denied := s.decided(agent, s.submit(agent, "ses_1", "k1", submitBody("WebFetch", `{"url":"https://example.com","prompt":"x"}`, "c1")).ActionID)
	if denied.States.Permission != lifecycle.PermissionDeny || denied.Decision.PolicyVersion != "p1" {
		t.Fatalf("hidden tool: %+v %+v", denied.States, denied.Decision)
	}
	allowed := s.decided(agent, s.submit(agent, "ses_1", "k2", submitBody("Bash", `{"command":"echo hi"}`, "c2")).ActionID)
	if allowed.Decision.Permission != lifecycle.PermissionAllow || allowed.Decision.PolicyVersion != "p1" {
		t.Fatalf("allowed Bash: %+v", allowed.Decision)
	}
}
