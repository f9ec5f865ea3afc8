package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/store"
)

// riskStack wires the permission engine as serve does: the built-in
// reviewer (which also grades every ask) and the execution's history.
func riskStack(t *testing.T) *stack {
	root := t.TempDir()
	return newStackWith(t, func(st store.Store) (actionflow.Decider, func(*httpapi.Config)) {
		ps := policystore.New(st, httpapi.ValidatePermissionPolicy, policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)))
		live := policystore.Parsed[*permission.Policy]{Store: ps, Parse: permission.ParsePolicy}
		eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: st, CredentialStores: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		d := &decider.Decider{Engine: eng, Policies: live, ProjectRoot: root, WorkingDir: root, HomeDir: root, History: actionflow.History{Store: st}}
		return d, func(c *httpapi.Config) {
			c.Policies = ps
			c.Tools = httpapi.PermissionTools{Policies: live, Default: decider.DefaultPolicy(), Catalog: catalog}
		}
	})
}

// Every ask of the default mode carries its risk on the approval (API,
// validated against the OpenAPI file): low for a proven-safe call, high
// for a download an earlier call of the same execution made, run now.
func TestRiskOnApprovals(t *testing.T) {
	s := riskStack(t)
	human := s.token(auth.RoleHuman, "ses_1")
	agent := s.token(auth.RoleAgent, "ses_1")
	zero := int64(0)
	if r := s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human, body: httpapi.PolicyBody{ExpectedVersion: &zero,
		Policy: json.RawMessage(`{"version":"p1","mode":"default","allow":["Bash(curl *)"]}`)}}); r.status != 200 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	dl := s.decided(agent, s.submit(agent, "ses_1", "k1", submitBody("Bash", `{"command":"curl -o x.sh https://example.com/x.sh"}`, "c1")).ActionID)
	if dl.Decision.Permission != lifecycle.PermissionAllow || dl.Decision.Risk != nil {
		t.Fatalf("download: %+v", dl.Decision)
	}
	body := submitBody("Bash", `{"command":"bash x.sh"}`, "c2")
	body["execution_id"] = dl.ExecutionID
	run := s.submit(agent, "ses_1", "k2", body)
	safe := s.submit(agent, "ses_1", "k3", submitBody("Bash", `{"command":"ls -la"}`, "c3"))

	cases := []struct {
		name  string
		view  httpapi.ActionView
		level string
		why   string
	}{
		{"staged download run", run, "high", "downloaded from the network"},
		{"proven safe", safe, "low", "proven safe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ap := s.pendingApproval(human, "ses_1", tc.view.ActionID)
			if ap.Risk == nil || ap.Risk.Level != tc.level {
				t.Fatalf("approval risk %+v, want %s", ap.Risk, tc.level)
			}
			if !strings.Contains(ap.Risk.Reasons[0].Text, tc.why) || ap.Risk.Reasons[0].ModelGenerated {
				t.Fatalf("reasons %+v, want %q", ap.Risk.Reasons, tc.why)
			}
			v := s.decided(agent, tc.view.ActionID)
			if v.Decision.Permission != lifecycle.PermissionAsk || v.Decision.Risk == nil || v.Decision.Risk.Level != tc.level {
				t.Fatalf("decision %+v", v.Decision)
			}
		})
	}
}
