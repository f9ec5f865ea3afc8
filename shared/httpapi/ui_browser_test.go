package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// page is one browser tab on the Activity UI, in its own browser context.
type page struct {
	t   *testing.T
	ctx context.Context
	// name prefixes the page's screenshots.
	name string

	mu         sync.Mutex
	exceptions []string
}

// openPage opens url in a new browser context and fails the test if the
// page throws an uncaught exception, leaves a promise rejection unhandled
// or breaks the Content-Security-Policy.
func openPage(t *testing.T, browser context.Context, name, url string) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &page{t: t, ctx: ctx, name: name}
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			// An uncaught exception, an unhandled rejection, or anything the
			// Content-Security-Policy refused (the UI needs no inline code).
			if m.Type == chromedp.ConsoleException || strings.Contains(m.Text, "Content Security Policy") {
				p.mu.Lock()
				p.exceptions = append(p.exceptions, m.String())
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, e := range p.exceptions {
			t.Errorf("%s: the page reported: %s", name, e)
		}
	})
	p.do(chromedp.Navigate(url))
	return p
}

func (p *page) fail(format string, args ...any) {
	p.t.Helper()
	p.shot("failure")
	if text, err := run(p, chromedp.Evaluate[string]("document.body.innerText")); err == nil {
		p.t.Logf("%s: the page reads:\n%s", p.name, text)
	}
	p.t.Fatalf(p.name+": "+format, args...)
}

func run[T any](p *page, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	return chromedp.Run(ctx, a)
}

func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if _, err := run(p, chromedp.Steps(steps...)); err != nil {
		p.fail("%v", err)
	}
}

// eval returns the value of a JavaScript expression.
func eval[T any](p *page, expr string, opts ...chromedp.EvaluateOption) T {
	p.t.Helper()
	v, err := run(p, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		p.fail("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the expression is truthy (the DOM is what changes,
// so it is checked on every mutation and every 50 ms).
func (p *page) waitJS(what, expr string) {
	p.t.Helper()
	if _, err := run(p, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(12*time.Second))); err != nil {
		p.fail("waiting for %s: %v", what, err)
	}
}

func (p *page) wait(sel string) {
	p.t.Helper()
	p.waitJS(sel, "document.querySelector("+jsString(sel)+") !== null")
}

func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, "document.querySelector("+jsString(sel)+").innerText")
}

func (p *page) click(sel string) {
	p.t.Helper()
	p.wait(sel)
	p.do(chromedp.Click(chromedp.CSS(sel)))
}

// shot saves a PNG of the whole page to the artifacts directory.
func (p *page) shot(label string) {
	p.t.Helper()
	png, err := run(p, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Logf("screenshot %s: %v", label, err)
		return
	}
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' {
			return r
		}
		return '_'
	}, p.t.Name()+"-"+p.name+"-"+label) + ".png"
	path := filepath.Join(artifactsDir(p.t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", path)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ready waits until the page shows the session live and loaded.
func (p *page) ready() {
	p.t.Helper()
	p.wait(`#live[data-state="live"]`)
	p.wait(`.section[data-section="history"] .count[data-count]:not([data-count=""])`)
}

// watchCards records every data-state a decision card takes, with its
// status line, so a test sees a state that lasts only a moment.
func (p *page) watchCards() {
	p.t.Helper()
	eval[bool](p, `(() => {
		window.__cardStates = [];
		new MutationObserver((ms) => {
			for (const m of ms) {
				if (m.attributeName !== "data-state") continue;
				const c = m.target;
				window.__cardStates.push({ action: c.dataset.actionId, state: c.dataset.state,
					status: c.querySelector(".card-status").textContent,
					answer: (c.querySelector(".answer:not([hidden])") || {}).textContent || "" });
			}
		}).observe(document.getElementById("decisions"), { subtree: true, attributes: true, attributeFilter: ["data-state"] });
		return true;
	})()`)
}

type cardState struct {
	Action string `json:"action"`
	State  string `json:"state"`
	Status string `json:"status"`
	Answer string `json:"answer"`
}

func (p *page) cardStates(action ids.ActionID) []cardState {
	p.t.Helper()
	var out []cardState
	for _, c := range eval[[]cardState](p, "window.__cardStates") {
		if c.Action == string(action) {
			out = append(out, c)
		}
	}
	return out
}

func card(action ids.ActionID) string {
	return `#decisions .card[data-action-id="` + string(action) + `"]`
}

func branchOf(exec ids.ExecutionID) string {
	return `#activity button.branch[data-execution-ids~="` + string(exec) + `"]`
}

func execRow(exec ids.ExecutionID) string {
	return `#details .execution[data-execution-id="` + string(exec) + `"]`
}

// noNotice: nothing failed for this session, so no failure notice shows.
func (p *page) noNotice() {
	p.t.Helper()
	if !eval[bool](p, `document.getElementById("notice").hidden`) {
		p.fail("a failure notice shows: %q", p.text("#notice"))
	}
}

func (s *uiStack) execution(token string, id ids.ExecutionID) httpapi.ExecutionView {
	s.t.Helper()
	r := s.do(req{method: "GET", path: "/v1/executions/" + string(id), token: token})
	if r.status != http.StatusOK {
		s.t.Fatalf("get execution: %d %s", r.status, r.body)
	}
	var v httpapi.ExecutionView
	r.decode(s.t, &v)
	return v
}

// TestUI drives the bundled Activity page in Debian's chromium against
// the real embedded stack, over HTTP only. Screenshots go to
// $ARTIFACTS_DIR/ui (default: testdata/artifacts/ui at the repository root).
func TestUI(t *testing.T) {
	browser := newBrowser(t)

	// The owner has the page open; the agent asks afterwards; the card
	// appears live without disturbing the composer; Approve shows the
	// answer and "Sending…" at once, then the applied receipt; the branch
	// details show the outcome; the execution offers exactly its
	// advertised controls, whose commands show accepted, then applied.
	t.Run("approve live", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_ui"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		if loc := eval[string](p, "location.href"); strings.Contains(loc, "token") {
			p.fail("the token stays in the address bar: %s", loc)
		}
		if got := eval[string](p, `sessionStorage.getItem("lifecycle.token")`); got != human {
			p.fail("the token is not kept in sessionStorage")
		}
		if got := p.text("#who"); !strings.Contains(got, session) || !strings.Contains(got, "human") {
			p.fail("the session header reads %q", got)
		}
		p.watchCards()
		const draft = "only touch the staging config"
		p.do(chromedp.SendKeys(chromedp.CSS("#composer-text"), draft))

		v := s.submit(agent, session, "k1", submitBody("risky", `{"command":"deploy --prod","description":"ship it"}`, "c1"))
		ap := s.pendingApproval(agent, session, v.ActionID)
		p.wait(card(v.ActionID))
		text := p.text(card(v.ActionID))
		for _, want := range []string{"risky", "deploy --prod", ap.ArgsDigest, "Approve", "Decline"} {
			if !strings.Contains(text, want) {
				p.fail("the card does not show %q:\n%s", want, text)
			}
		}
		if focus := eval[string](p, "document.activeElement.id"); focus != "composer-text" {
			p.fail("the new card took the focus (now on %q)", focus)
		}
		if got := eval[string](p, `document.getElementById("composer-text").value`); got != draft {
			p.fail("the composer draft changed to %q", got)
		}
		p.waitJS("the count of Needs attention", `document.querySelector('.section[data-section="needs_attention"] .count').dataset.count === "1"`)
		p.shot("1-pending")

		p.click(card(v.ActionID) + ` button[data-decision="approve"]`)
		p.wait(card(v.ActionID) + `[data-state="answered"]`)
		states := p.cardStates(v.ActionID)
		if len(states) < 2 || states[0].State != "sending" || !strings.Contains(states[0].Status, "Sending") ||
			!strings.Contains(states[0].Answer, "Approve") || states[len(states)-1].State != "answered" {
			p.fail("the card went through %+v; want sending (with the answer) then answered", states)
		}
		if got := p.text(card(v.ActionID) + " .card-status"); !strings.Contains(got, "Approved · applied") {
			p.fail("the receipt reads %q", got)
		}
		p.shot("2-answered")

		done := s.waitAction(agent, v.ActionID)
		if done.States.Outcome != lifecycle.OutcomeSucceeded || done.Approval.Status != actionflow.ApprovalApproved {
			t.Fatalf("after the click: %+v, approval %s", done.States, done.Approval.Status)
		}
		if by := done.Approval.DecidedBy; by == nil || by.Role != auth.RoleHuman || by.Origin != auth.OriginUI || by.Session != session {
			t.Fatalf("decided by %+v", by)
		}
		if n := s.exec.calls.Load(); n != 1 {
			t.Fatalf("the executor ran %d times", n)
		}

		p.click(card(v.ActionID) + " button.dismiss")
		// The row moves to In progress once the page has read the outcome;
		// click it where it stays.
		p.click(`.section[data-section="in_progress"] ` + strings.TrimPrefix(branchOf(v.ExecutionID), "#activity "))
		p.wait(execRow(v.ExecutionID) + ` .action[data-action-id="` + string(v.ActionID) + `"][data-label="Succeeded"] .badge[data-kind="outcome"][data-value="succeeded"]`)
		if got := p.text("#details .details-head"); !strings.Contains(got, "1 execution") || !strings.Contains(got, `risky: command="deploy --prod"`) {
			p.fail("the details heading reads %q", got)
		}

		// Exactly the controls the execution advertises.
		want := s.execution(human, v.ExecutionID).Controls
		p.wait(execRow(v.ExecutionID) + " .controls button")
		got := eval[[]string](p, `[...document.querySelectorAll('`+execRow(v.ExecutionID)+` .controls button')].map(b => b.dataset.control)`)
		if !slices.Equal(got, want) {
			p.fail("the page offers %v; the execution advertises %v", got, want)
		}
		p.shot("3-details")

		// Pause while another attempt owns the execution: saved
		// ("accepted"); applied once the owner lets go and reconciles.
		ctx := context.Background()
		owner, err := s.ctl.Acquire(ctx, v.ExecutionID, "att_ui_test")
		if err != nil {
			t.Fatal(err)
		}
		p.click(execRow(v.ExecutionID) + ` .controls button[data-control="pause"]`)
		p.wait(execRow(v.ExecutionID) + ` .command[data-type="pause"][data-status="accepted"]`)
		p.shot("4-accepted")
		s.ctl.Release(ctx, owner)
		if err := s.ctl.Reconcile(ctx, v.ExecutionID); err != nil {
			t.Fatal(err)
		}
		p.wait(execRow(v.ExecutionID) + ` .command[data-type="pause"][data-status="applied"]`)
		if st := s.execution(human, v.ExecutionID).Execution.Status; st != actionflow.ExecPaused {
			t.Fatalf("after Pause the execution is %s", st)
		}
		p.waitJS("the paused branch under Needs attention",
			`(document.querySelector('.section[data-section="needs_attention"] `+strings.TrimPrefix(branchOf(v.ExecutionID), "#activity ")+` .status') || {}).textContent === "Paused"`)

		// Steer from the composer: its draft goes to the execution.
		p.wait(execRow(v.ExecutionID) + ` .controls button[data-control="continue"]`)
		p.click(execRow(v.ExecutionID) + ` .controls button[data-control="steer"]`)
		if focus := eval[string](p, "document.activeElement.id"); focus != "composer-text" {
			p.fail("Steer did not open the composer (focus on %q)", focus)
		}
		p.click("#composer-send")
		p.wait(`#composer-status[data-status="applied"]`)
		p.waitJS("the sent draft to clear", `document.getElementById("composer-text").value === ""`)
		if steering := s.execution(human, v.ExecutionID).Execution.Steering; !slices.Contains(steering, draft) {
			t.Fatalf("the execution's steering is %q", steering)
		}
		p.noNotice()
		if leaked := eval[[]string](p, `performance.getEntriesByType("resource").map(e => e.name).filter(u => u.includes(`+jsString(human)+`))`); len(leaked) > 0 {
			p.fail("the token went into request URLs: %v", leaked)
		}
		p.shot("5-steered")
	})

	// Declining shows Declined everywhere and never runs the operation.
	t.Run("decline", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_decline"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("risky", `{"command":"rm -rf build"}`, "c1"))
		other := s.submit(agent, session, "k2", submitBody("risky", `{"command":"rm -rf cache"}`, "c2"))
		p.wait(card(v.ActionID))
		p.wait(card(other.ActionID))
		p.click(card(v.ActionID) + ` button[data-decision="decline"]`)
		p.wait(card(v.ActionID) + `[data-state="answered"]`)
		if got := p.text(card(v.ActionID) + " .card-status"); !strings.Contains(got, "Declined · applied") || strings.Contains(got, "Approved") {
			p.fail("the receipt reads %q", got)
		}
		// The other request is its own card, still waiting, untouched.
		if st := eval[string](p, `document.querySelector(`+jsString(card(other.ActionID))+`).dataset.state`); st != "pending" {
			p.fail("the other card is %q", st)
		}
		if eval[bool](p, `document.querySelector(`+jsString(card(other.ActionID)+" .answer")+`).hidden`) == false {
			p.fail("the other card shows an answer")
		}
		p.shot("two-cards")
		p.click(card(other.ActionID) + ` button[data-decision="decline"]`)
		p.wait(card(other.ActionID) + `[data-state="answered"]`)
		done := s.waitAction(agent, v.ActionID)
		if done.States.Outcome != lifecycle.OutcomeNotStarted || done.Approval.Status != actionflow.ApprovalDeclinedSt {
			t.Fatalf("after Decline: %+v, approval %s", done.States, done.Approval.Status)
		}
		if n := s.exec.calls.Load(); n != 0 {
			t.Fatalf("a declined operation ran (%d calls)", n)
		}
		p.click(`.section[data-section="in_progress"] ` + strings.TrimPrefix(branchOf(v.ExecutionID), "#activity "))
		p.wait(execRow(v.ExecutionID) + ` .action[data-action-id="` + string(v.ActionID) + `"][data-label="Declined"] .badge[data-kind="outcome"][data-value="not_started"]`)
		p.noNotice()
		p.shot("declined")
	})

	// The owner cancels an execution (Cancel asks once more in place);
	// the owner ended and only the model response record is missing: the
	// branch is History, "Ended · response record incomplete", claiming no
	// success.
	t.Run("ended with the response record incomplete", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_ended"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("noop", `{}`, "c1"))
		s.waitAction(agent, v.ActionID)
		s.noResponseRecord.Store(v.ExecutionID, true)
		p.click(`.section[data-section="in_progress"] ` + strings.TrimPrefix(branchOf(v.ExecutionID), "#activity "))
		cancel := execRow(v.ExecutionID) + ` .controls button[data-control="cancel"]`
		p.click(cancel)
		p.wait(cancel + ".armed")
		if n := eval[int](p, `document.querySelectorAll(`+jsString(execRow(v.ExecutionID)+" .command")+`).length`); n != 0 {
			p.fail("the first click on Cancel sent a command")
		}
		p.click(cancel)
		p.wait(execRow(v.ExecutionID) + ` .command[data-type="cancel"][data-status="applied"]`)
		if st := s.execution(human, v.ExecutionID).Execution.Status; st != actionflow.ExecCancelled {
			t.Fatalf("after Cancel the execution is %s", st)
		}
		row := `.section[data-section="history"] ` + strings.TrimPrefix(branchOf(v.ExecutionID), "#activity ")
		p.waitJS("the History row", `(document.querySelector(`+jsString(row+" .status")+`) || {}).textContent === "Ended · response record incomplete"`)
		if got := p.text("#details"); !strings.Contains(got, "does not claim success") || strings.Contains(got, "Completed") {
			p.fail("the details read %q", got)
		}
		// Cancelled: nothing but Fork and Retry is advertised, and offered.
		got := eval[[]string](p, `[...document.querySelectorAll('`+execRow(v.ExecutionID)+` .controls button')].map(b => b.dataset.control)`)
		if want := s.execution(human, v.ExecutionID).Controls; !slices.Equal(got, want) {
			p.fail("the page offers %v; the execution advertises %v", got, want)
		}
		p.noNotice()
		p.shot("incomplete")
	})

	// A second owner's page (another session's token) never sees the first
	// session's approval, and the first never sees the second's.
	t.Run("sessions are isolated", func(t *testing.T) {
		s := newUIStack(t)
		a := openPage(t, browser, "session-a", s.url+"/ui/#token="+s.token(auth.RoleHuman, "ses_a"))
		b := openPage(t, browser, "session-b", s.url+"/ui/#token="+s.token(auth.RoleHuman, "ses_b"))
		a.ready()
		b.ready()
		va := s.submit(s.token(auth.RoleAgent, "ses_a"), "ses_a", "k1", submitBody("risky", `{"command":"only for a"}`, "c1"))
		a.wait(card(va.ActionID))
		vb := s.submit(s.token(auth.RoleAgent, "ses_b"), "ses_b", "k1", submitBody("risky", `{"command":"only for b"}`, "c1"))
		b.wait(card(vb.ActionID))
		// b has read past a's approval (the one log order does not mix
		// sessions, but b's view is current once its own card shows).
		for _, c := range []struct {
			p     *page
			other ids.ActionID
			words string
		}{{a, vb.ActionID, "only for b"}, {b, va.ActionID, "only for a"}} {
			html := eval[string](c.p, "document.documentElement.outerHTML")
			if strings.Contains(html, string(c.other)) || strings.Contains(html, c.words) {
				c.p.fail("the page shows another session's approval")
			}
			if n := eval[int](c.p, "document.querySelectorAll('#decisions .card').length"); n != 1 {
				c.p.fail("%d cards; want 1", n)
			}
		}
		a.shot("isolated")
		b.shot("isolated")
	})

	// The answer to Approve is lost after the server applied it: the card
	// says delivery is unknown and keeps the answer; Retry sends the same
	// request, which the server recognises as the decision already taken
	// by this person: the receipt, and the operation ran once.
	t.Run("unknown delivery retries the same request", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_retry"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("risky", `{"command":"migrate db"}`, "c1"))
		s.dropDecision.Store(true)
		p.click(card(v.ActionID) + ` button[data-decision="approve"]`)
		p.wait(card(v.ActionID) + `[data-state="unknown"]`)
		if code := <-s.dropped; code != http.StatusOK {
			t.Fatalf("the server answered the lost decision with %d", code)
		}
		if got := p.text(card(v.ActionID)); !strings.Contains(got, "Delivery unknown") || !strings.Contains(got, "Your answer: Approve") {
			p.fail("the card reads %q", got)
		}
		p.noNotice() // an unknown delivery is not a confirmed failure
		p.shot("1-unknown")
		p.click(card(v.ActionID) + " button.retry")
		p.wait(card(v.ActionID) + `[data-state="answered"]`)
		if got := p.text(card(v.ActionID) + " .card-status"); !strings.Contains(got, "Approved · applied") {
			p.fail("the receipt reads %q", got)
		}
		done := s.waitAction(agent, v.ActionID)
		if done.States.Outcome != lifecycle.OutcomeSucceeded {
			t.Fatalf("outcome %s", done.States.Outcome)
		}
		if n := s.exec.calls.Load(); n != 1 {
			t.Fatalf("the executor ran %d times", n)
		}
		p.noNotice()
		p.shot("2-retried")
	})

	// An outcome nobody can vouch for: the branch needs attention, the row
	// says "Reconciliation required" with what to check and only the
	// recovery controls the execution advertises.
	t.Run("unknown outcome", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_unknown"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("flaky", `{"url":"https://pay.example/charge"}`, "c1"))
		s.waitAction(agent, v.ActionID)
		p.click(`.section[data-section="needs_attention"] ` + strings.TrimPrefix(branchOf(v.ExecutionID), "#activity "))
		row := execRow(v.ExecutionID) + ` .action[data-action-id="` + string(v.ActionID) + `"]`
		p.wait(row + ` .badge[data-kind="outcome"][data-value="unknown"]`)
		p.waitJS("the receipt's evidence", `(document.querySelector(`+jsString(row+" .reconcile")+`) || {}).innerText?.includes("connection_reset")`)
		p.wait(row + " .recovery button")
		if got := p.text(row + " .reconcile"); !strings.Contains(got, "Reconciliation required") || !strings.Contains(got, "connection_reset") {
			p.fail("the reconciliation reads %q", got)
		}
		var want []string
		for _, c := range s.execution(human, v.ExecutionID).Controls {
			if c == "retry" || c == "fork" || c == "cancel" {
				want = append(want, c)
			}
		}
		got := eval[[]string](p, `[...document.querySelectorAll(`+jsString(row+" .recovery button")+`)].map(b => b.dataset.control)`)
		if len(want) == 0 || !slices.Equal(got, want) {
			p.fail("recovery offers %v; the execution advertises %v of retry/fork/cancel", got, want)
		}
		if n := s.unknown.calls.Load(); n != 1 {
			t.Fatalf("the operation was dispatched %d times", n)
		}
		p.noNotice()
		p.shot("reconcile")
	})

	// An admin opens one session, answers, and switches to another session
	// while the answer is in flight; the answer then fails (someone else
	// decided first). The failure belongs to the first session: the
	// second never shows it, nor the first session's cards.
	t.Run("a previous session's failure never shows", func(t *testing.T) {
		s := newUIStack(t)
		admin, err := s.issuer.Issue(auth.RoleAdmin, "", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		p := openPage(t, browser, "admin", s.url+"/ui/#token="+admin)
		open := func(session string) {
			p.wait(`#session-form:not([hidden])`)
			p.do(chromedp.SetValue(chromedp.CSS("#session-input"), session), chromedp.Click(chromedp.CSS(`#session-form button[type="submit"]`)))
			p.waitJS("session "+session, `document.querySelector("#who code").textContent === `+jsString(session))
			p.ready()
		}
		open("ses_x")
		v := s.submit(s.token(auth.RoleAgent, "ses_x"), "ses_x", "k1", submitBody("risky", `{"command":"in x"}`, "c1"))
		ap := s.pendingApproval(admin, "ses_x", v.ActionID)
		hold := make(chan struct{})
		s.holdDecision.Store(&hold)
		p.click(card(v.ActionID) + ` button[data-decision="approve"]`)
		p.wait(card(v.ActionID) + `[data-state="sending"]`)
		open("ses_y")
		if n := eval[int](p, "document.querySelectorAll('#decisions .card').length"); n != 0 {
			p.fail("session ses_y shows %d cards of ses_x", n)
		}
		// The owner of ses_x declines first; the held approval then loses.
		r := s.do(req{method: "POST", path: "/v1/approvals/" + string(ap.ApprovalID), token: s.token(auth.RoleHuman, "ses_x"),
			body: httpapi.DecisionBody{Decision: "decline", Digest: ap.ArgsDigest}})
		if r.status != http.StatusOK {
			t.Fatalf("decline: %d %s", r.status, r.body)
		}
		close(hold)
		if code := <-s.held; code != http.StatusConflict {
			t.Fatalf("the held approval answered %d; want 409", code)
		}
		// The page has the answer once its fetch completed; one more round
		// trip after that lets the page's handlers run.
		p.waitJS("the held answer to arrive", `performance.getEntriesByType("resource").some(e => e.name.includes("/v1/approvals/") && e.responseEnd > 0)`)
		eval[string](p, `fetch("/healthz").then(r => r.text())`, chromedp.EvalAwaitPromise)
		p.noNotice()
		if html := eval[string](p, "document.documentElement.outerHTML"); strings.Contains(html, string(v.ActionID)) {
			p.fail("session ses_y shows ses_x's action")
		}
		p.shot("switched")
	})

	// Losing the event stream is not an error: the page says it is
	// reconnecting, resumes from its last event, and live updates go on.
	t.Run("reconnects quietly", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_reconnect"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		eval[bool](p, `(() => {
			window.__live = [];
			new MutationObserver(() => window.__live.push(document.getElementById("live").dataset.state))
				.observe(document.getElementById("live"), { attributes: true, attributeFilter: ["data-state"] });
			return true;
		})()`)
		s.srv.CloseClientConnections()
		p.waitJS("a reconnection", `window.__live.includes("reconnecting") && document.getElementById("live").dataset.state === "live"`)
		p.noNotice()
		v := s.submit(agent, session, "k1", submitBody("risky", `{"command":"after the gap"}`, "c1"))
		p.wait(card(v.ActionID))
		p.noNotice()
	})

	// Where the API answers the events route with JSON batches (behind
	// API Gateway), the page long-polls them from the same position.
	t.Run("long-poll fallback", func(t *testing.T) {
		s := newUIStack(t, func(c *httpapi.Config) { c.DisableStreaming = true })
		const session = "ses_batches"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("risky", `{"command":"polled"}`, "c1"))
		p.click(card(v.ActionID) + ` button[data-decision="approve"]`)
		p.wait(card(v.ActionID) + `[data-state="answered"]`)
		p.waitJS("the outcome in Activity", `document.querySelector('.section[data-section="in_progress"] .count').dataset.count === "1"`)
		if leaked := eval[[]string](p, `performance.getEntriesByType("resource").map(e => e.name).filter(u => u.includes(`+jsString(human)+`))`); len(leaked) > 0 {
			p.fail("the token went into request URLs: %v", leaked)
		}
		p.noNotice()
	})
}
