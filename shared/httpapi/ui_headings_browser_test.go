package httpapi_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// bareID is what a heading must never be: an id or the end of one
// ("…4k2m9q", "exe_01jd…").
var bareID = regexp.MustCompile(`…[0-9a-z]{4,}|\b(exe|act|run|cmd|apr|proc)_[0-9a-z]{4,}`)

// TestUIHeadings (issue 12): branch rows, execution rows and the details
// heading show the server's short human heading: the title the client
// gave at start, else the first tool call and a summary of its arguments
// (Bash: npm test); a fork says so in words (its heading's "· fork" and
// "Forked from" the execution it came from, in the row and in the Fork
// command's receipt); approval and question cards name their execution
// by the same heading; no row or card text is a bare id. Screenshots go
// where TestUI's do.
func TestUIHeadings(t *testing.T) {
	browser := newBrowser(t)
	s := newUIStackEngine(t, func(c *embedded.Config) {
		// Bash is allowed and, with no host worker, waits for a host:
		// its heading is all this test needs.
		d := c.Decider.(ruleDecider)
		d["Bash"] = lifecycle.PermissionAllow
	})
	const session = "ses_ui"
	human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)

	titled := submitBody("noop", `{"q":"x"}`, "c1")
	titled["title"] = "Deploy the docs site"
	a1 := s.submit(agent, session, "k1", titled)
	s.waitAction(agent, a1.ActionID)
	a2 := s.submit(agent, session, "k2", submitBody("Bash", `{"command":"npm test","description":"run the tests"}`, "c2"))

	p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
	p.ready()

	cases := []struct {
		name          string
		exec          ids.ExecutionID
		want, summary string
	}{
		{"a title given at start", a1.ExecutionID, "Deploy the docs site", ""},
		{"no title: the first tool call", a2.ExecutionID, "Bash: npm test", "npm test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p.wait(branchOf(tc.exec))
			if got := p.text(branchOf(tc.exec) + " .heading"); got != tc.want {
				p.fail("the branch row's heading reads %q, want %q", got, tc.want)
			}
			p.click(branchOf(tc.exec))
			p.wait(execRow(tc.exec) + " .exec-heading")
			if got := p.text(execRow(tc.exec) + " .exec-heading"); got != tc.want {
				p.fail("the execution row's heading reads %q, want %q", got, tc.want)
			}
			if got := p.text("#details-title"); got != tc.want {
				p.fail("the details heading reads %q, want %q", got, tc.want)
			}
			if tc.summary != "" {
				if got := p.text(execRow(tc.exec) + " .action .summary"); got != tc.summary {
					p.fail("the action row's summary reads %q, want %q", got, tc.summary)
				}
			}
		})
	}

	t.Run("a fork says so in words", func(t *testing.T) {
		p.click(branchOf(a1.ExecutionID))
		p.press(execRow(a1.ExecutionID) + ` .controls button[data-control="fork"]`)
		const fork = "Deploy the docs site · fork"
		cmd := execRow(a1.ExecutionID) + ` .command[data-type="fork"][data-status="applied"]`
		p.wait(cmd)
		// The receipt names the new execution once Activity lists it.
		p.waitJS("the Fork receipt to name the fork", `(document.querySelector(`+jsString(cmd)+`) || {innerText: ""}).innerText.includes(`+jsString("→ “"+fork+"”")+`)`)
		const sel = `#activity button.branch .heading`
		p.waitJS("the fork's branch row", `[...document.querySelectorAll(`+jsString(sel)+`)].some((e) => e.innerText === `+jsString(fork)+`)`)
		p.waitJS("to click the fork's row", `(() => { const n = [...document.querySelectorAll(`+jsString(sel)+`)].find((e) => e.innerText === `+jsString(fork)+`); if (!n) return false; n.click(); return true; })()`)
		row := `#details .execution .origin[data-origin="fork"]`
		p.wait(row)
		if got := p.text(row); got != "Forked from “Deploy the docs site”" {
			p.fail("the fork's origin reads %q", got)
		}
		if got := p.text("#details-title"); got != fork {
			p.fail("the fork's details heading reads %q", got)
		}
		p.shot("fork")
	})

	// The decision panels' cards name their execution by the same
	// heading, quoted: the title when the client gave one, else the first
	// tool call; the full id stays in the tooltip.
	t.Run("cards name their execution by its heading", func(t *testing.T) {
		asked := submitBody("risky", `{"command":"deploy the docs"}`, "c3")
		asked["title"] = "Publish the release notes"
		ap := s.submit(agent, session, "k3", asked)
		q := submitBody("AskUserQuestion", oneQuestion, "c4")
		q["title"] = "Choose the migration target"
		qa := s.submit(agent, session, "k4", q)
		untitled := s.submit(agent, session, "k5", submitBody("AskUserQuestion", oneQuestion, "c5"))
		cases := []struct {
			name, card string
			exec       ids.ExecutionID
			want       string // "" means the branch row's heading
		}{
			{"an approval card of a titled execution", card(ap.ActionID), ap.ExecutionID, "Publish the release notes"},
			{"a question card of a titled execution", qcard(qa.ActionID), qa.ExecutionID, "Choose the migration target"},
			{"a question card of an untitled execution", qcard(untitled.ActionID), untitled.ExecutionID, ""},
		}
		for _, tc := range cases {
			p.wait(tc.card)
			want := tc.want
			if want == "" {
				p.wait(branchOf(tc.exec))
				want = p.text(branchOf(tc.exec) + " .heading")
				if !strings.HasPrefix(want, "AskUserQuestion: ") {
					p.fail("%s: the branch row's heading reads %q", tc.name, want)
				}
			}
			name := tc.card + " .exec-name"
			p.waitJS(tc.name+" to name "+want, `(document.querySelector(`+jsString(name)+`) || {innerText: ""}).innerText === `+jsString("“"+want+"”"))
			if id := eval[string](p, `document.querySelector(`+jsString(name)+`).title`); id != string(tc.exec) {
				p.fail("%s: the heading's tooltip is %q, want the execution id %s", tc.name, id, tc.exec)
			}
			// Under the card's "Execution" label: the approval's facts,
			// the question's line.
			if got := eval[string](p, `document.querySelector(`+jsString(name)+`).closest("dd, p.exec").innerText`); !strings.Contains(got, "“"+want+"”") ||
				(tc.card == qcard(qa.ActionID) && !strings.HasPrefix(got, "Execution “"+want+"”")) {
				p.fail("%s: the execution line reads %q", tc.name, got)
			}
		}
		p.shot("cards")
	})

	t.Run("no row or card text is a bare id", func(t *testing.T) {
		texts := eval[[]string](p, `[...document.querySelectorAll("#activity button.branch, #details .exec-head, #details .command, #details-title, #decisions .card")].map((e) => e.innerText)`)
		if n := eval[int](p, `document.querySelectorAll("#decisions .card").length`); n < 3 {
			p.fail("only %d cards on screen", n)
		}
		if len(texts) < 6 {
			p.fail("only %d rows on screen", len(texts))
		}
		for _, txt := range texts {
			if m := bareID.FindString(txt); m != "" {
				p.fail("a row reads %q: %q is an id", txt, m)
			}
		}
		p.noNotice()
		p.shot("headings")
	})
}

// cardNamesExec checks that a decision card names its execution as the
// branch row does (a one-execution branch: the execution's heading),
// quoted, with the full id in the tooltip, and that no text of the card is
// an id or the end of one.
func (p *page) cardNamesExec(sel string, exec ids.ExecutionID) {
	p.t.Helper()
	p.wait(branchOf(exec))
	want := "“" + p.text(branchOf(exec)+" .heading") + "”"
	name := sel + " .exec-name"
	p.waitJS("the card to name "+want, `(document.querySelector(`+jsString(name)+`) || {innerText: ""}).innerText === `+jsString(want))
	if id := eval[string](p, `document.querySelector(`+jsString(name)+`).title`); id != string(exec) {
		p.fail("the card's execution tooltip is %q, want %s", id, exec)
	}
	if m := bareID.FindString(p.text(sel)); m != "" {
		p.fail("the card reads %q: an id", m)
	}
}
