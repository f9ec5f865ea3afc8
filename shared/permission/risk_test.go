package permission_test

import (
	"context"
	"testing"

	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
)

// Every ask carries its risk, in every mode; the risk never changes the
// decision outside auto mode, and allows and denials carry none.
func TestRiskOnEveryAsk(t *testing.T) {
	st := openStore(t)
	// No protected paths: they would decide rm -rf / and bash x.sh first.
	eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: st, CredentialStores: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	downloaded := func(context.Context) ([]permission.PriorCall, error) {
		return []permission.PriorCall{{ActionID: "act_dl", Tool: "Bash", Args: args("command", "curl -o x.sh https://example.com/x.sh"), Permission: lifecycle.PermissionAllow}}, nil
	}
	cases := []struct {
		name   string
		pol    *permission.Policy
		call   permission.Call
		recent permission.RecentCalls
		perm   lifecycle.Permission
		level  permission.RiskLevel // "" : no risk
	}{
		{"default mode, rm -rf / asked, high", policy(t, "v1", permission.ModeDefault), bashCall("rm -rf /"), nil, lifecycle.PermissionAsk, permission.RiskHigh},
		{"default mode, ls asked, low", policy(t, "v1", permission.ModeDefault), bashCall("ls -la"), nil, lifecycle.PermissionAsk, permission.RiskLow},
		{"ask rule, make asked, medium", policy(t, "v1", permission.ModeDefault, "ask: Bash(make *)"), bashCall("make test"), nil, lifecycle.PermissionAsk, permission.RiskMedium},
		{"default mode, staged download asked, high, still ask", policy(t, "v1", permission.ModeDefault), bashCall("bash x.sh"), downloaded, lifecycle.PermissionAsk, permission.RiskHigh},
		{"acceptEdits, staged download with an allow rule is allowed, no risk", policy(t, "v1", permission.ModeAcceptEdits, "allow: Bash(bash *)"), bashCall("bash x.sh"), downloaded, lifecycle.PermissionAllow, ""},
		{"deny rule, no risk", policy(t, "v1", permission.ModeDefault, "deny: Bash(rm *)"), bashCall("rm -rf /"), nil, lifecycle.PermissionDeny, ""},
		{"auto mode, staged download blocked", policy(t, "v2", permission.ModeAuto), bashCall("bash x.sh"), downloaded, lifecycle.PermissionDeny, ""},
		{"auto mode, ./x of a download blocked", policy(t, "v2", permission.ModeAuto), bashCall("./x.sh"), downloaded, lifecycle.PermissionDeny, ""},
		{"auto mode, chmod then ./x is opaque: asked, high", policy(t, "v2", permission.ModeAuto), bashCall("chmod +x x.sh; ./x.sh"), downloaded, lifecycle.PermissionAsk, permission.RiskHigh},
		{"auto mode, bash of another file asked, medium", policy(t, "v2", permission.ModeAuto), bashCall("bash y.sh"), downloaded, lifecycle.PermissionAsk, permission.RiskMedium},
		{"auto mode, unproven asked, medium", policy(t, "v2", permission.ModeAuto), bashCall("make test"), nil, lifecycle.PermissionAsk, permission.RiskMedium},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := eng.Decide(context.Background(), permission.Request{Trusted: trusted(true), Call: tc.call, Policy: tc.pol, Recent: tc.recent})
			if err != nil {
				t.Fatal(err)
			}
			if d.Permission != tc.perm {
				t.Fatalf("permission %s (%+v), want %s", d.Permission, d.Reason, tc.perm)
			}
			if tc.level == "" {
				if d.Risk != nil {
					t.Fatalf("a %s decision carries a risk: %+v", d.Permission, d.Risk)
				}
				return
			}
			if d.Risk == nil || d.Risk.Level != tc.level || len(d.Risk.Reasons) == 0 {
				t.Fatalf("risk %+v, want level %s with reasons", d.Risk, tc.level)
			}
		})
	}
}
