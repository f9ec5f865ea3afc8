package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
)

func qcard(action ids.ActionID) string {
	return `#decisions .qcard[data-action-id="` + string(action) + `"]`
}

// storedQuestion is GET /v1/questions/{id} as the tests read it.
type storedQuestion struct {
	QuestionID string                     `json:"question_id"`
	Status     string                     `json:"status"`
	CommandID  string                     `json:"command_id"`
	Answers    map[string]json.RawMessage `json:"answers"`
}

// question reads the question request the page shows for an action.
func (s *uiStack) question(p *page, token string, action ids.ActionID) storedQuestion {
	s.t.Helper()
	id := eval[string](p, `document.querySelector(`+jsString(qcard(action))+`).dataset.questionId`)
	r := s.do(req{method: "GET", path: "/v1/questions/" + id, token: token})
	if r.status != http.StatusOK {
		s.t.Fatalf("get question %s: %d %s", id, r.status, r.body)
	}
	var q storedQuestion
	r.decode(s.t, &q)
	if q.Answers == nil {
		// A view may wrap the record.
		var w struct {
			Question storedQuestion `json:"question"`
		}
		if json.Unmarshal(r.body, &w) == nil && w.Question.QuestionID != "" {
			q = w.Question
		}
	}
	return q
}

// recordAnswers keeps the body of every answer the page sends (api.js
// calls the global fetch).
func (p *page) recordAnswers() {
	p.t.Helper()
	eval[bool](p, `(() => {
		window.__answers = [];
		const f = window.fetch;
		window.fetch = (u, o) => {
			if (String(u).endsWith("/answer")) window.__answers.push(o && o.body);
			return f(u, o);
		};
		return true;
	})()`)
}

// answerPosts counts the answers the page sent.
func (p *page) answerPosts() int {
	p.t.Helper()
	return eval[int](p, `performance.getEntriesByType("resource").filter(e => e.name.endsWith("/answer")).length`)
}

const (
	oneQuestion = `{"questions":[{"question":"Which database should the migration target?","header":"Database",
		"options":[{"label":"staging","description":"the copy refreshed nightly"},{"label":"production","description":"live data"}]}]}`
	threeQuestions = `{"questions":[
		{"id":"env","question":"Where should it run?","header":"Environment","options":[{"label":"staging"},{"label":"production"}]},
		{"id":"checks","question":"Which checks first?","header":"Checks","kind":"multiple","multiSelect":true,
			"options":[{"label":"lint"},{"label":"unit tests"},{"label":"integration tests"}]},
		{"id":"window","question":"When?","header":"Window","kind":"form","fields":[
			{"name":"hour","type":"integer","required":true,"label":"Hour (UTC)"},
			{"name":"note","type":"string","label":"Note"},
			{"name":"notify","type":"string","enum":["team","nobody"],"label":"Notify"}]}]}`
)

// TestUIQuestions: question requests in the decision panels (issue 14,
// specification 003 "User decision panels and receipts").
func TestUIQuestions(t *testing.T) {
	browser := newBrowser(t)

	// A question arrives while the owner types: its card never takes the
	// focus or the draft; Submit shows the answer and "Sending…" at once,
	// then the answered receipt, in the panel and in the details' row;
	// the tool call's receipt carries the answer.
	t.Run("first answer", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q1"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		p.watchCards()
		const draft = "and keep the logs"
		p.do(chromedp.SendKeys(chromedp.CSS("#composer-text"), draft))
		v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", oneQuestion, "c1"))
		p.wait(qcard(v.ActionID))
		text := p.text(qcard(v.ActionID))
		for _, want := range []string{"Which database", "DATABASE", "staging", "the copy refreshed nightly", "production", "Submit", "Skip"} {
			if !strings.Contains(text, want) {
				p.fail("the card does not show %q:\n%s", want, text)
			}
		}
		p.cardNamesExec(qcard(v.ActionID), v.ExecutionID)
		if focus := eval[string](p, "document.activeElement.id"); focus != "composer-text" {
			p.fail("the question took the focus (now on %q)", focus)
		}
		if got := eval[string](p, `document.getElementById("composer-text").value`); got != draft {
			p.fail("the composer draft changed to %q", got)
		}
		p.shot("1-asked")
		p.click(qcard(v.ActionID) + ` input[value="staging"]`)
		p.click(qcard(v.ActionID) + ` button.submit`)
		p.wait(qcard(v.ActionID) + `[data-state="answered"]`)
		states := p.cardStates(v.ActionID)
		if len(states) < 2 || states[0].State != "sending" || !strings.Contains(states[0].Status, "Sending") ||
			!strings.Contains(states[0].Answer, "staging") || states[len(states)-1].State != "answered" {
			p.fail("the card went through %+v; want sending (with the answer) then answered", states)
		}
		if got := p.text(qcard(v.ActionID) + " .card-status"); !strings.Contains(got, "Answered · applied") {
			p.fail("the receipt reads %q", got)
		}
		p.shot("2-answered")
		q := s.question(p, human, v.ActionID)
		if q.Status != "answered" || string(q.Answers["q1"]) != `"staging"` {
			t.Fatalf("stored: %+v", q)
		}
		done := s.waitAction(agent, v.ActionID)
		if done.States.Outcome != lifecycle.OutcomeSucceeded || !strings.Contains(string(mustJSON(t, done.Receipt)), "staging") {
			t.Fatalf("the tool call ended %+v with receipt %s", done.States, mustJSON(t, done.Receipt))
		}
		// The receipt stays in the conversation: the action row shows it.
		p.click(`.section[data-section="in_progress"] ` + strings.TrimPrefix(branchOf(v.ExecutionID), "#activity "))
		row := execRow(v.ExecutionID) + ` .action[data-action-id="` + string(v.ActionID) + `"]`
		p.wait(row + ` .q-receipt[data-state="answered"]`)
		if got := p.text(row + " .q-receipt"); !strings.Contains(got, "Answered") || !strings.Contains(got, "staging") {
			p.fail("the details' receipt reads %q", got)
		}
		if got := eval[string](p, `document.getElementById("composer-text").value`); got != draft {
			p.fail("the composer draft changed to %q", got)
		}
		p.noNotice()
		p.shot("3-receipt-in-details")
	})

	// Back / Next / Collapse keep the draft and send nothing; Submit sends
	// every answer once, together.
	t.Run("multi-step draft", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q2"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", threeQuestions, "c1"))
		c := qcard(v.ActionID)
		p.wait(c)
		stepIs := func(n, header string) {
			p.t.Helper()
			p.waitJS("step "+n, `document.querySelector(`+jsString(c)+`).dataset.step === `+jsString(n))
			if got := p.text(c + " .q-header"); !strings.EqualFold(got, header) {
				p.fail("step %s shows header %q; want %q", n, got, header)
			}
		}
		stepIs("0", "Environment")
		if !eval[bool](p, `document.querySelector(`+jsString(c+" button.back")+`).disabled`) {
			p.fail("Back is enabled on the first question")
		}
		// Next without an answer stays and says why.
		p.click(c + " button.next")
		stepIs("0", "Environment")
		if got := p.text(c + " .form-error"); !strings.Contains(got, "answer") {
			p.fail("the hint reads %q", got)
		}
		p.click(c + ` input[value="production"]`)
		p.click(c + " button.next")
		stepIs("1", "Checks")
		p.click(c + ` input[value="lint"]`)
		p.click(c + ` input[value="integration tests"]`)
		p.click(c + " button.back")
		stepIs("0", "Environment")
		if !eval[bool](p, `document.querySelector(`+jsString(c+` input[value="production"]`)+`).checked`) {
			p.fail("Back lost the first answer")
		}
		p.click(c + " button.collapse")
		p.waitJS("the collapsed card", `document.querySelector(`+jsString(c+" .q-body")+`).hidden`)
		p.shot("1-collapsed")
		p.click(c + " button.collapse")
		p.click(c + " button.next")
		stepIs("1", "Checks")
		got := eval[[]string](p, `[...document.querySelectorAll(`+jsString(c+` input:checked`)+`)].map(i => i.value)`)
		if strings.Join(got, ",") != "lint,integration tests" {
			p.fail("after Back, Collapse and Next the checks are %v", got)
		}
		p.shot("2-draft-kept")
		if n := p.answerPosts(); n != 0 {
			p.fail("navigation sent %d answers", n)
		}
		p.click(c + " button.next")
		stepIs("2", "Window")
		if !eval[bool](p, `!!document.activeElement.closest(`+jsString(c)+`)`) {
			p.fail("Next to the last question dropped the focus out of the card (on %q)", eval[string](p, "document.activeElement.outerHTML.slice(0, 80)"))
		}
		p.do(chromedp.SendKeys(chromedp.CSS(c+` input[name="hour"]`), "14"),
			chromedp.SendKeys(chromedp.CSS(c+` input[name="note"]`), "after the standup"),
			chromedp.SetValue(chromedp.CSS(c+` select[name="notify"]`), "0"))
		eval[bool](p, `document.querySelector(`+jsString(c+` select[name="notify"]`)+`).dispatchEvent(new Event("change")) || true`)
		p.click(c + " button.submit")
		p.wait(c + `[data-state="answered"]`)
		if n := p.answerPosts(); n != 1 {
			p.fail("%d answers sent; want 1", n)
		}
		if got := p.text(c + " .answer"); !strings.Contains(got, "production") || !strings.Contains(got, "lint, integration tests") || !strings.Contains(got, "Hour (UTC): 14") {
			p.fail("the card shows the answer %q", got)
		}
		q := s.question(p, human, v.ActionID)
		want := map[string]string{"env": `"production"`, "checks": `["lint","integration tests"]`, "window": `{"hour":14,"note":"after the standup","notify":"team"}`}
		for k, w := range want {
			if g := string(q.Answers[k]); g != w {
				t.Errorf("stored answer %s = %s; want %s", k, g, w)
			}
		}
		p.noNotice()
		p.shot("3-answered")
	})

	// Skip declines the whole request: the receipt says skipped, never
	// answered, and the tool call fails as declined.
	t.Run("skip", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q3"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", threeQuestions, "c1"))
		c := qcard(v.ActionID)
		p.click(c + ` input[value="staging"]`) // a draft that Skip discards
		p.click(c + " button.skip")
		p.wait(c + `[data-state="skipped"]`)
		if got := p.text(c); !strings.Contains(got, "Skipped") || strings.Contains(got, "Answered") {
			p.fail("the receipt reads %q", got)
		}
		if q := s.question(p, human, v.ActionID); q.Status != "declined" || len(q.Answers) != 0 {
			t.Fatalf("stored %+v", q)
		}
		done := s.waitAction(agent, v.ActionID)
		if done.States.Outcome == lifecycle.OutcomeSucceeded {
			t.Fatalf("a skipped question succeeded: %+v", done.States)
		}
		p.noNotice()
		p.shot("skipped")
	})

	// The answer to Submit is lost after the server applied it: the card
	// keeps the answer and its command; Retry sends the very same body and
	// gets the stored result; the answer was applied once.
	t.Run("uncertain retry without duplicate", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q4"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", oneQuestion, "c1"))
		c := qcard(v.ActionID)
		p.recordAnswers()
		p.click(c + ` input[value="production"]`)
		suffix := "/answer"
		s.dropSuffix.Store(&suffix)
		p.click(c + " button.submit")
		p.wait(c + `[data-state="unknown"]`)
		if code := <-s.dropped; code != http.StatusOK && code != http.StatusAccepted {
			t.Fatalf("the server answered the lost answer with %d", code)
		}
		if got := p.text(c); !strings.Contains(got, "Delivery unknown") || !strings.Contains(got, "production") {
			p.fail("the card reads %q", got)
		}
		first := s.question(p, human, v.ActionID)
		p.noNotice()
		p.shot("1-unknown")
		p.click(c + " button.retry")
		p.wait(c + `[data-state="answered"]`)
		if n := p.answerPosts(); n != 2 {
			p.fail("%d answers sent; want the first and one retry", n)
		}
		after := s.question(p, human, v.ActionID)
		if after.CommandID != first.CommandID || after.CommandID == "" || string(after.Answers["q1"]) != `"production"` {
			t.Fatalf("before the retry %+v, after %+v", first, after)
		}
		// The retry is the very same request: same command_id, same answer.
		bodies := eval[[]string](p, `window.__answers`)
		if len(bodies) != 2 || bodies[0] != bodies[1] || !strings.Contains(bodies[0], first.CommandID) {
			t.Fatalf("the page sent %q; want the same body twice, with command %s", bodies, first.CommandID)
		}
		done := s.waitAction(agent, v.ActionID)
		if done.States.Outcome != lifecycle.OutcomeSucceeded {
			t.Fatalf("outcome %s", done.States.Outcome)
		}
		if n := s.countEvents(human, session, "question.answered"); n != 1 {
			t.Fatalf("%d question.answered events; want 1", n)
		}
		p.noNotice()
		p.shot("2-retried")
	})

	// The execution is cancelled while its question waits: the card says
	// cancelled, offers nothing, and never reads as answered.
	t.Run("cancelled", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q5"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", oneQuestion, "c1"))
		c := qcard(v.ActionID)
		p.click(c + ` input[value="staging"]`)
		ver := s.execution(human, v.ExecutionID).Execution.Version
		r := s.do(req{method: "POST", path: "/v1/executions/" + string(v.ExecutionID) + "/commands", token: human,
			body: map[string]any{"command_id": "cmd_cancel_q5", "type": "cancel", "expected_version": ver}})
		if r.status >= 300 {
			t.Fatalf("cancel: %d %s", r.status, r.body)
		}
		p.waitJS("the card to end", `["cancelled", "expired"].includes(document.querySelector(`+jsString(c)+`).dataset.state)`)
		got := p.text(c)
		if strings.Contains(got, "Answered") || strings.Contains(got, "Your answer") || eval[int](p, `document.querySelectorAll(`+jsString(c+" button.submit:not([hidden]):not(:disabled)")+`).length`) != 0 {
			p.fail("the ended card reads %q", got)
		}
		if n := p.answerPosts(); n != 0 {
			p.fail("%d answers sent", n)
		}
		p.shot("cancelled")
	})

	// Nobody answers within the wait (24 h on the engine's clock): the card
	// says expired, offers nothing, never reads as answered, and the tool
	// call did not succeed.
	t.Run("expired", func(t *testing.T) {
		clock := sfnlocal.NewFakeClock(time.Now())
		s := newUIStackEngine(t, func(c *embedded.Config) { c.EngineClock, c.Clock = clock, clock.Now })
		const session = "ses_q10"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", threeQuestions, "c1"))
		c := qcard(v.ActionID)
		p.click(c + ` input[value="staging"]`) // a draft nobody sends
		if q := s.question(p, human, v.ActionID); q.Status != "pending" {
			t.Fatalf("before the timeout: %+v", q)
		}
		clock.Advance(25 * time.Hour)
		p.wait(c + `[data-state="expired"]`)
		got := p.text(c)
		if !strings.Contains(got, "Expired") || strings.Contains(got, "Answered") || strings.Contains(got, "Your answer:") ||
			eval[int](p, `document.querySelectorAll(`+jsString(c+" button.submit:not([hidden]):not(:disabled)")+`).length`) != 0 {
			p.fail("the expired card reads %q", got)
		}
		if n := p.answerPosts(); n != 0 {
			p.fail("%d answers sent", n)
		}
		if q := s.question(p, human, v.ActionID); q.Status != "expired" || len(q.Answers) != 0 {
			t.Fatalf("stored %+v", q)
		}
		done := s.waitAction(agent, v.ActionID)
		if done.States.Outcome == lifecycle.OutcomeSucceeded {
			t.Fatalf("an expired question succeeded: %+v", done.States)
		}
		p.click(`#activity ` + strings.TrimPrefix(branchOf(v.ExecutionID), "#activity "))
		row := execRow(v.ExecutionID) + ` .action[data-action-id="` + string(v.ActionID) + `"]`
		p.wait(row + ` .q-receipt`)
		if got := p.text(row + " .q-receipt"); !strings.Contains(got, "Expired") || strings.Contains(got, "Answered") {
			p.fail("the details read %q", got)
		}
		p.shot("expired")
	})

	// A page with the agent's token shows the question but offers no way
	// to answer it (only a human of the session answers).
	t.Run("agent token cannot answer", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q11"
		agent := s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "agent", s.url+"/ui/#token="+agent)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", oneQuestion, "c1"))
		c := qcard(v.ActionID)
		p.wait(c)
		if n := eval[int](p, `document.querySelectorAll(`+jsString(c+" button.submit, "+c+" button.skip, "+c+" button.next")+`).length`); n != 0 {
			p.fail("the agent's page offers %d answer controls", n)
		}
		if !eval[bool](p, `[...document.querySelectorAll(`+jsString(c+" input")+`)].every(i => i.disabled)`) {
			p.fail("the agent's page lets the options be chosen")
		}
		if got := p.text(c + " .card-status"); !strings.Contains(got, "Only the session's human owner") {
			p.fail("the card reads %q", got)
		}
		p.shot("agent")
	})

	// Two question requests and an approval at once: three keyed cards,
	// each with its execution; answering one leaves the others as they were.
	t.Run("two cards at once", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q6"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		a := s.submit(agent, session, "k1", submitBody("AskUserQuestion", oneQuestion, "c1"))
		b := s.submit(agent, session, "k2", submitBody("AskUserQuestion", threeQuestions, "c2"))
		ap := s.submit(agent, session, "k3", submitBody("risky", `{"command":"deploy"}`, "c3"))
		p.wait(qcard(a.ActionID))
		p.wait(qcard(b.ActionID))
		p.wait(card(ap.ActionID))
		for _, v := range []struct {
			act  ids.ActionID
			exec ids.ExecutionID
		}{{a.ActionID, a.ExecutionID}, {b.ActionID, b.ExecutionID}} {
			if got := eval[string](p, `document.querySelector(`+jsString(qcard(v.act))+`).dataset.executionId`); got != string(v.exec) {
				p.fail("card of %s names execution %q", v.act, got)
			}
		}
		p.click(qcard(b.ActionID) + ` input[value="staging"]`)
		p.click(qcard(a.ActionID) + ` input[value="production"]`)
		p.shot("1-three-cards")
		p.click(qcard(a.ActionID) + " button.submit")
		p.wait(qcard(a.ActionID) + `[data-state="answered"]`)
		if st := eval[string](p, `document.querySelector(`+jsString(qcard(b.ActionID))+`).dataset.state`); st != "pending" {
			p.fail("the other question is %q", st)
		}
		if !eval[bool](p, `document.querySelector(`+jsString(qcard(b.ActionID)+` input[value="staging"]`)+`).checked`) {
			p.fail("the other card lost its draft")
		}
		if st := eval[string](p, `document.querySelector(`+jsString(card(ap.ActionID))+`).dataset.state`); st != "pending" {
			p.fail("the approval is %q", st)
		}
		if q := s.question(p, human, b.ActionID); q.Status != "pending" {
			t.Fatalf("the other question is %+v", q)
		}
		p.noNotice()
		p.shot("2-one-answered")
	})

	// An answer the server refuses (400 naming answers.window.hour) brings
	// the card back to that question with the message; the draft stays
	// and the corrected answer goes through.
	t.Run("invalid answer keeps the draft", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q8"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", threeQuestions, "c1"))
		c := qcard(v.ActionID)
		p.click(c + ` input[value="staging"]`)
		p.click(c + " button.next")
		p.click(c + ` input[value="lint"]`)
		p.click(c + " button.next")
		p.do(chromedp.SendKeys(chromedp.CSS(c+` input[name="hour"]`), "14.5"))
		p.click(c + " button.submit")
		p.waitJS("the refused answer back in the draft", `document.querySelector(`+jsString(c)+`).dataset.state === "pending" &&
			document.querySelector(`+jsString(c+" .form-error")+`).textContent.includes("Not sent")`)
		if got := p.text(c + " .form-error"); !strings.Contains(got, "Hour (UTC)") {
			p.fail("the message does not name the field: %q", got)
		}
		if got := eval[string](p, `document.querySelector(`+jsString(c+` input[name="hour"]`)+`).value`); got != "14.5" {
			p.fail("the refused value is gone: %q", got)
		}
		p.noNotice()
		p.shot("1-refused-field")
		p.click(c + " button.back")
		p.click(c + " button.back")
		if !eval[bool](p, `document.querySelector(`+jsString(c+` input[value="staging"]`)+`).checked`) {
			p.fail("the first answer is gone after the 400")
		}
		p.click(c + " button.next")
		p.click(c + " button.next")
		p.do(chromedp.SetValue(chromedp.CSS(c+` input[name="hour"]`), ""), chromedp.SendKeys(chromedp.CSS(c+` input[name="hour"]`), "9"))
		p.click(c + " button.submit")
		p.wait(c + `[data-state="answered"]`)
		if q := s.question(p, human, v.ActionID); string(q.Answers["window"]) != `{"hour":9}` || string(q.Answers["env"]) != `"staging"` {
			t.Fatalf("stored %+v", q.Answers)
		}
		p.shot("2-answered")
	})

	// Someone else answered while this page heard nothing (its event
	// stream held): Submit loses with 409; the card says not applied and
	// who answered, never "answered" by this person.
	t.Run("answered elsewhere first", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q9"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("AskUserQuestion", oneQuestion, "c1"))
		c := qcard(v.ActionID)
		p.wait(c)
		id := eval[string](p, `document.querySelector(`+jsString(c)+`).dataset.questionId`)
		hold := make(chan struct{})
		s.holdEvents.Store(&hold)
		defer close(hold)
		s.srv.CloseClientConnections()
		p.waitJS("the page to lose its stream", `document.getElementById("live").dataset.state !== "live"`)
		r := s.do(req{method: "POST", path: "/v1/questions/" + id + "/answer", token: s.token(auth.RoleHuman, session),
			body: map[string]any{"command_id": "cmd_other_tab", "answers": map[string]any{"q1": "production"}}})
		if r.status != http.StatusOK {
			t.Fatalf("the other answer: %d %s", r.status, r.body)
		}
		p.click(c + ` input[value="staging"]`)
		p.click(c + " button.submit")
		p.wait(c + `[data-state="refused"]`)
		got := p.text(c + " .card-status")
		if !strings.Contains(got, "Not applied") || !strings.Contains(got, "already answered") || strings.Contains(got, "applied by") {
			p.fail("the card reads %q", got)
		}
		if q := s.question(p, human, v.ActionID); string(q.Answers["q1"]) != `"production"` || q.CommandID != "cmd_other_tab" {
			t.Fatalf("stored %+v", q)
		}
		p.shot("not-applied")
	})

	// A reload reads the pending requests again; the answered one is gone
	// from the panels and its tool call succeeded.
	t.Run("refresh", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_q7"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		const draft = "composer text survives"
		p.do(chromedp.SendKeys(chromedp.CSS("#composer-text"), draft))
		a := s.submit(agent, session, "k1", submitBody("AskUserQuestion", oneQuestion, "c1"))
		b := s.submit(agent, session, "k2", submitBody("AskUserQuestion", threeQuestions, "c2"))
		p.wait(qcard(a.ActionID))
		p.wait(qcard(b.ActionID))
		p.reload()
		p.wait(qcard(a.ActionID))
		p.wait(qcard(b.ActionID))
		if got := eval[string](p, `document.getElementById("composer-text").value`); got != draft {
			p.fail("after the reload the draft is %q", got)
		}
		p.shot("1-reloaded")
		p.click(qcard(a.ActionID) + ` input[value="staging"]`)
		p.click(qcard(a.ActionID) + " button.submit")
		p.wait(qcard(a.ActionID) + `[data-state="answered"]`)
		s.waitAction(agent, a.ActionID)
		p.reload()
		p.wait(qcard(b.ActionID))
		p.waitJS("only the waiting card", `document.querySelectorAll("#decisions .card").length === 1`)
		if st := eval[string](p, `document.querySelector(`+jsString(qcard(b.ActionID))+`).dataset.state`); st != "pending" {
			p.fail("the waiting card is %q", st)
		}
		// The answered request's receipt stays in the conversation: the
		// details read it from the stored question.
		p.click(`.section[data-section="in_progress"] ` + strings.TrimPrefix(branchOf(a.ExecutionID), "#activity "))
		row := execRow(a.ExecutionID) + ` .action[data-action-id="` + string(a.ActionID) + `"]`
		p.wait(row + ` .q-receipt[data-state="answered"]`)
		if got := p.text(row + " .q-receipt"); !strings.Contains(got, "Answered by human:"+session) || !strings.Contains(got, "Database: staging") {
			p.fail("after the reload the receipt reads %q", got)
		}
		p.noNotice()
		p.shot("2-reloaded-after-answer")
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countEvents counts the session's events of one type.
func (s *uiStack) countEvents(token string, session ids.SessionID, typ string) int {
	s.t.Helper()
	r := s.do(req{method: "GET", path: "/v1/sessions/" + string(session) + "/events?after=0&wait=0&limit=1000", token: token,
		header: map[string]string{"Accept": "application/json"}})
	if r.status != http.StatusOK {
		s.t.Fatalf("events: %d %s", r.status, r.body)
	}
	var b struct {
		Events []struct {
			Type string `json:"type"`
		} `json:"events"`
	}
	r.decode(s.t, &b)
	n := 0
	for _, e := range b.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}
