package httpapi_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/ids"
)

// reload reloads the page (the token stays in sessionStorage) and waits
// until it is live and loaded again.
func (p *page) reload() {
	p.t.Helper()
	p.do(chromedp.Reload())
	p.ready()
}

// TestUIPanels: the decision panels above the composer (specification
// 003, "User decision panels and receipts"): keyed cards per request,
// each naming its execution, composer isolation, refresh.
func TestUIPanels(t *testing.T) {
	browser := newBrowser(t)

	// Two approvals of two executions are two keyed cards, each naming its
	// execution; a reload reads them again (the draft stays); answering
	// one leaves the other waiting; after another reload only the waiting
	// one is a card, and the answered one reads Succeeded in the details.
	t.Run("approvals: two cards and refresh", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_panels"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		const draft = "keep this draft"
		p.do(chromedp.SendKeys(chromedp.CSS("#composer-text"), draft))
		a := s.submit(agent, session, "k1", submitBody("risky", `{"command":"deploy a"}`, "c1"))
		b := s.submit(agent, session, "k2", submitBody("risky", `{"command":"deploy b"}`, "c2"))
		if a.ExecutionID == b.ExecutionID {
			t.Fatalf("both requests are in execution %s", a.ExecutionID)
		}
		cardsOf := func() {
			p.wait(card(a.ActionID))
			p.wait(card(b.ActionID))
			for _, v := range []struct {
				act  ids.ActionID
				exec ids.ExecutionID
			}{{a.ActionID, a.ExecutionID}, {b.ActionID, b.ExecutionID}} {
				got := eval[string](p, `document.querySelector(`+jsString(card(v.act))+`).dataset.executionId`)
				if got != string(v.exec) {
					p.fail("card of %s is keyed to execution %q; want %s", v.act, got, v.exec)
				}
				p.cardNamesExec(card(v.act), v.exec)
			}
		}
		cardsOf()
		if focus := eval[string](p, "document.activeElement.id"); focus != "composer-text" {
			p.fail("a new card took the focus (now on %q)", focus)
		}
		p.shot("1-two-cards")

		p.reload()
		cardsOf()
		if n := eval[int](p, `document.querySelectorAll("#decisions .card").length`); n != 2 {
			p.fail("%d cards after the reload; want 2", n)
		}
		if got := eval[string](p, `document.getElementById("composer-text").value`); got != draft {
			p.fail("after the reload the draft is %q", got)
		}
		p.shot("2-reloaded")

		p.click(card(a.ActionID) + ` button[data-decision="approve"]`)
		p.wait(card(a.ActionID) + `[data-state="answered"]`)
		if st := eval[string](p, `document.querySelector(`+jsString(card(b.ActionID))+`).dataset.state`); st != "pending" {
			p.fail("the other card is %q", st)
		}
		s.waitAction(agent, a.ActionID)
		p.reload()
		p.wait(card(b.ActionID))
		p.waitJS("only the waiting card", `document.querySelectorAll("#decisions .card").length === 1`)
		p.click(`.section[data-section="in_progress"] ` + strings.TrimPrefix(branchOf(a.ExecutionID), "#activity "))
		p.wait(execRow(a.ExecutionID) + ` .action[data-action-id="` + string(a.ActionID) + `"][data-label="Succeeded"]`)
		if got := eval[string](p, `document.getElementById("composer-text").value`); got != draft {
			p.fail("the draft is %q", got)
		}
		p.noNotice()
		p.shot("3-answered-one")
	})

	// The execution is cancelled while its approval waits: the card does
	// not vanish or read as approval; it says cancelled, offers nothing,
	// and the operation never ran.
	t.Run("approvals: cancelled while waiting", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_panels_cancel"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("risky", `{"command":"drop table"}`, "c1"))
		p.wait(card(v.ActionID))
		ver := s.execution(human, v.ExecutionID).Execution.Version
		r := s.do(req{method: "POST", path: "/v1/executions/" + string(v.ExecutionID) + "/commands", token: human,
			body: map[string]any{"command_id": "cmd_cancel_panels", "type": "cancel", "expected_version": ver}})
		if r.status >= 300 {
			t.Fatalf("cancel: %d %s", r.status, r.body)
		}
		p.wait(card(v.ActionID) + `[data-state="ended"]`)
		got := p.text(card(v.ActionID))
		if !strings.Contains(got, "not approved") || strings.Contains(got, "Approved ·") ||
			eval[int](p, `document.querySelectorAll(`+jsString(card(v.ActionID)+" button.approve:not([hidden])")+`).length`) != 0 {
			p.fail("the ended card reads %q", got)
		}
		if n := s.exec.calls.Load(); n != 0 {
			t.Fatalf("the operation ran %d times", n)
		}
		p.noNotice()
		p.shot("cancelled")
		p.click(card(v.ActionID) + " button.dismiss")
		p.waitJS("the dismissed card", `document.querySelectorAll("#decisions .card").length === 0`)
	})
}
