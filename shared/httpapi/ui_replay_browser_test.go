package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/replay"
)

// The policy view, reached from the top bar's Policy button, shows the
// live policy and replays a candidate over what the agent did: the
// transitions and the changed actions with both reasons; nothing changes.
func TestUIPolicyReplay(t *testing.T) {
	browser := newBrowser(t)
	var ps *policystore.Store
	var rp *replay.Replayer
	s := newUIStackEngine(t, func(c *embedded.Config) {
		root := t.TempDir()
		ps = policystore.New(c.Store, httpapi.ValidatePermissionPolicy, policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)))
		eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: c.Store, CredentialStores: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		d := &decider.Decider{Engine: eng, Policies: policystore.Parsed[*permission.Policy]{Store: ps, Parse: permission.ParsePolicy},
			ProjectRoot: root, WorkingDir: root, HomeDir: root, History: actionflow.History{Store: c.Store}}
		c.Decider = d
		if rp, err = replay.New(replay.Config{Engine: eng, Context: d.Trusted, Actions: actionflow.History{Store: c.Store}, Store: c.Store}); err != nil {
			t.Fatal(err)
		}
	}, func(c *httpapi.Config) { c.Policies, c.Replays = ps, rp })
	const session = "ses_replay"
	human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
	zero := int64(0)
	if r := s.do(req{method: "PUT", path: "/v1/sessions/" + session + "/policy", token: human, body: httpapi.PolicyBody{ExpectedVersion: &zero,
		Policy: json.RawMessage(`{"version":"live","mode":"default","allow":["Bash(ls *)"]}`)}}); r.status != 200 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	for i, cmd := range []string{"ls -la", "cat notes.txt", "git status"} {
		v := s.submit(agent, session, "k"+cmd, submitBody("Bash", `{"command":`+jsString(cmd)+`}`, "c"+string(rune('1'+i))))
		deadline := time.Now().Add(20 * time.Second)
		for {
			var a httpapi.ActionView
			s.do(req{method: "GET", path: "/v1/actions/" + string(v.ActionID), token: agent}).decode(t, &a)
			if a.Decision != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s was not decided", cmd)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
	p.ready()
	p.click("#policy-open")
	p.wait(".replay-form textarea")
	if got := p.text(".policy-facts"); !strings.Contains(got, "live") {
		p.fail("the policy view reads %q", got)
	}
	cand := `{"version":"cand","mode":"default","allow":["Bash(cat *)"],"deny":["Bash(ls *)"]}`
	eval[bool](p, `(() => { document.getElementById("replay-candidate").value = `+jsString(cand)+`; return true; })()`)
	submit(p)
	p.wait(".replay-summary")
	if got := p.text(".replay-summary"); !strings.Contains(got, "3 actions replayed") || !strings.Contains(got, "2 changed") {
		p.fail("the summary reads %q", got)
	}
	if n := eval[int](p, `document.querySelectorAll('.transitions tr[data-from="allow"][data-to="deny"]').length`); n != 1 {
		p.fail("%d allow → deny rows", n)
	}
	if n := eval[int](p, `document.querySelectorAll(".changes li.change").length`); n != 2 {
		p.fail("%d changed actions listed", n)
	}
	if got := p.text(".changes"); !strings.Contains(got, "allow_rule") || !strings.Contains(got, "deny_rule") || !strings.Contains(got, "Bash(ls *)") {
		p.fail("the changes do not give both reasons: %q", got)
	}
	p.shot("replay")
	// An invalid candidate names its place; nothing is replayed.
	eval[bool](p, `(() => { document.getElementById("replay-candidate").value = '{"version":"x","deny":["Bash(("]}'; return true; })()`)
	submit(p)
	p.waitJS("the error", `!document.querySelector(".replay-form .form-error").hidden`)
	if got := p.text(".replay-form .form-error"); !strings.HasPrefix(got, "policy.deny") {
		p.fail("the error reads %q", got)
	}
	p.shot("replay-invalid")
	// The replay changed nothing.
	var pv httpapi.PolicyView
	s.do(req{method: "GET", path: "/v1/sessions/" + session + "/policy", token: human}).decode(t, &pv)
	if pv.PolicyVersion != "live" {
		t.Fatalf("the live policy changed: %+v", pv)
	}
}

// submit presses Replay (by script: the dock at the bottom may cover the
// button where a mouse click would land).
func submit(p *page) {
	p.t.Helper()
	eval[bool](p, `(() => { const b = document.querySelector(".replay-submit"); b.scrollIntoView(); b.click(); return true; })()`)
}
