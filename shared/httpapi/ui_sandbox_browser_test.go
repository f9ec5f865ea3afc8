package httpapi_test

import (
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/auth"
)

// TestUISandbox (issue 20: "the receipt records the profile that actually
// ran, and the API and Activity show it"): a host call the in-process
// worker runs in bubblewrap reads "sandbox: bwrap" in its action row; one
// that asked for the network, approved by the owner on its card, ran
// "bwrap+network"; under a policy with "sandbox": "off", "off". Each row
// is read once the call's receipt is recorded (what ran, not what was
// decided). Screenshots go where TestUI's do.
func TestUISandbox(t *testing.T) {
	browser := newBrowser(t)
	cases := []struct {
		name, policy, args string
		approve            bool
		want               string
	}{
		{name: "default", policy: `{"version":"v1","mode":"bypassPermissions"}`, args: `{"command":"echo confined"}`, want: "bwrap"},
		{name: "network approved", policy: `{"version":"v1","mode":"bypassPermissions"}`, args: `{"command":"echo reachable","network":true}`,
			approve: true, want: "bwrap+network"},
		{name: "sandbox off", policy: `{"version":"v1","mode":"bypassPermissions","sandbox":"off"}`, args: `{"command":"echo unconfined"}`, want: "off"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newUIStackEngine(t, withHostWorker(t, tc.policy))
			const session = "ses_sbx"
			human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
			p := openPage(t, browser, tc.name, s.url+"/ui/#token="+human)
			p.ready()
			v := s.submit(agent, session, "k1", submitBody("Bash", tc.args, "c1"))
			if tc.approve {
				// Asking for the network is a question for a person, in every mode.
				p.wait(card(v.ActionID))
				if got := p.text(card(v.ActionID)); !strings.Contains(got, "network") {
					p.fail("the approval card reads %q; want it to say what is relaxed", got)
				}
				p.click(card(v.ActionID) + ` button[data-decision="approve"]`)
			}
			if got := s.waitAction(agent, v.ActionID); got.States.Outcome != "succeeded" {
				t.Fatalf("the call: %+v", got.States)
			}
			p.click(branchOf(v.ExecutionID))
			row := execRow(v.ExecutionID) + ` .action[data-action-id="` + string(v.ActionID) + `"]`
			p.wait(row + ` .badge[data-kind="outcome"][data-value="succeeded"]`)
			p.wait(row + " .sandbox")
			if got := p.text(row + " .sandbox"); got != "sandbox: "+tc.want {
				p.fail("the action row's sandbox reads %q, want %q", got, "sandbox: "+tc.want)
			}
			p.noNotice()
			p.shot("sandbox")
		})
	}
}
