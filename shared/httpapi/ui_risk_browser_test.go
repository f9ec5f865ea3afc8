package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/policystore"
)

// withRiskEngine gives the UI stack the real permission engine with the
// built-in reviewer (which grades every ask) and no protected paths, so
// rm -rf / is asked (not denied by the credential stores under /).
func withRiskEngine(t *testing.T) func(*embedded.Config) {
	return func(c *embedded.Config) {
		root := t.TempDir()
		ps := policystore.New(c.Store, nil, policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)))
		eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: c.Store, CredentialStores: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		c.Decider = &decider.Decider{Engine: eng, Policies: policystore.Parsed[*permission.Policy]{Store: ps, Parse: permission.ParsePolicy},
			ProjectRoot: root, WorkingDir: root, HomeDir: root, History: actionflow.History{Store: c.Store}}
	}
}

// The approval card shows the reviewer's risk: a high-risk card stands out
// (a red band, a "High risk" label with a sign) and names its reasons; a
// low-risk card says so quietly.
func TestUIRiskOnApprovalCard(t *testing.T) {
	browser := newBrowser(t)
	s := newUIStackEngine(t, withRiskEngine(t))
	const session = "ses_risk"
	human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
	p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
	p.ready()

	cases := []struct {
		name, cmd, level, label, why string
	}{
		{"low", "ls -la", "low", "Low risk", "proven safe"},
		{"high", "rm -rf /", "high", "High risk", "recursively deletes the file system root"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := s.submit(agent, session, "k"+tc.name, submitBody("Bash", `{"command":`+jsString(tc.cmd)+`}`, "c"+string(rune('1'+i))))
			sel := card(v.ActionID)
			p.wait(sel + ` .risk[data-risk="` + tc.level + `"]`)
			if got := p.text(sel + " .risk"); !strings.Contains(strings.ToLower(got), strings.ToLower(tc.label)) || !strings.Contains(got, tc.why) {
				p.fail("the %s card's risk reads %q", tc.name, got)
			}
			high := eval[bool](p, "document.querySelector("+jsString(sel)+").classList.contains('high-risk')")
			if high != (tc.level == "high") {
				p.fail("the %s card is high-risk=%v", tc.name, high)
			}
			// Visually distinct: the high card's band is red and wider.
			band := eval[string](p, "getComputedStyle(document.querySelector("+jsString(sel)+")).borderLeftWidth")
			if (tc.level == "high") != (band == "8px") {
				p.fail("the %s card's band is %s wide", tc.name, band)
			}
			eval[bool](p, "(document.querySelector("+jsString(sel)+").scrollIntoView(), true)")
			p.shot("risk-" + tc.level)
		})
	}
}
