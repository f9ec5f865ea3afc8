package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// breakOff serves r, then breaks the answer off on the way: the status
// line arrives (so the browser cannot resend the request on its own), the
// body never completes. It returns the status the server answered.
func breakOff(h http.Handler, w http.ResponseWriter, r *http.Request) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(rec.Body.Len()))
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes()[:1])
	http.NewResponseController(w).Flush()
	return rec.Code
}

// watchCommands records every status an End command's row shows and
// every data-state a Reconcile card takes, so a test sees a state that
// lasts only a moment ("sending").
func (p *page) watchControls() {
	p.t.Helper()
	eval[bool](p, `(() => {
		window.__endStates = [];
		window.__reconcileStates = [];
		const seen = new Map();
		new MutationObserver(() => {
			for (const c of document.querySelectorAll('#details .command[data-type="end"]')) {
				const key = c.dataset.commandId;
				if (seen.get(key) !== c.dataset.status) {
					seen.set(key, c.dataset.status);
					window.__endStates.push({ id: key, status: c.dataset.status, text: c.textContent });
				}
			}
		}).observe(document.getElementById("details"), { subtree: true, childList: true, attributes: true });
		new MutationObserver((ms) => {
			for (const m of ms) {
				if (m.attributeName !== "data-state" || !m.target.classList.contains("reconcile-card")) continue;
				const c = m.target;
				window.__reconcileStates.push({ action: c.dataset.actionId, state: c.dataset.state,
					status: c.querySelector(".card-status").textContent,
					answer: (c.querySelector(".answer:not([hidden])") || {}).textContent || "" });
			}
		}).observe(document.getElementById("details"), { subtree: true, attributes: true, attributeFilter: ["data-state"] });
		return true;
	})()`)
}

type commandState struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Text   string `json:"text"`
}

func (p *page) endStates() []commandState {
	p.t.Helper()
	return eval[[]commandState](p, "window.__endStates")
}

func (p *page) reconcileStates(action ids.ActionID) []cardState {
	p.t.Helper()
	var out []cardState
	for _, c := range eval[[]cardState](p, "window.__reconcileStates") {
		if c.Action == string(action) {
			out = append(out, c)
		}
	}
	return out
}

// press clicks the element sel selects once it exists, in one step of
// the page's own script: a live re-render between finding the node and
// clicking it (chromedp.Click's two steps) cannot lose the click.
func (p *page) press(sel string) {
	p.t.Helper()
	p.waitJS("to click "+sel, `(() => { const n = document.querySelector(`+jsString(sel)+`); if (!n) return false; n.click(); return true; })()`)
}

func inSection(section string, exec ids.ExecutionID) string {
	return `.section[data-section="` + section + `"] ` + strings.TrimPrefix(branchOf(exec), "#activity ")
}

// sectionStatus waits until exec's branch is listed in section with status.
func (p *page) sectionStatus(section string, exec ids.ExecutionID, status string) {
	p.t.Helper()
	p.waitJS("the branch under "+section+" as "+status,
		`(document.querySelector(`+jsString(inSection(section, exec)+" .status")+`) || {}).textContent === `+jsString(status))
}

func endForm(exec ids.ExecutionID) string {
	return execRow(exec) + ` form.end-form[data-execution-id="` + string(exec) + `"]`
}

func reconcileCard(action ids.ActionID) string {
	return `#details form.reconcile-card[data-action-id="` + string(action) + `"]`
}

// TestUIEndAndReconcile drives the End control and the Reconcile card of
// the Activity page in chromium, against the real embedded stack over
// HTTP only. Screenshots go where TestUI's go.
func TestUIEndAndReconcile(t *testing.T) {
	browser := newBrowser(t)

	// A running execution advertises End; the page offers it (and only
	// what the execution advertises), opens a form, shows the command
	// "Sending…" then applied, and the branch moves to History as
	// Completed; an ended execution offers End no more.
	t.Run("end completed", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_end"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		p.watchControls()
		v := s.submit(agent, session, "k1", submitBody("noop", `{"command":"npm test"}`, "c1"))
		s.waitAction(agent, v.ActionID)
		p.press(inSection("in_progress", v.ExecutionID))
		p.wait(execRow(v.ExecutionID) + ` .controls button[data-control="end"]`)
		want := s.execution(human, v.ExecutionID).Controls
		if !slices.Contains(want, "end") {
			t.Fatalf("a running execution advertises %v, without end", want)
		}
		got := eval[[]string](p, `[...document.querySelectorAll('`+execRow(v.ExecutionID)+` .controls button')].map(b => b.dataset.control)`)
		if !slices.Equal(got, want) {
			p.fail("the page offers %v; the execution advertises %v", got, want)
		}
		p.press(execRow(v.ExecutionID) + ` .controls button[data-control="end"]`)
		p.wait(endForm(v.ExecutionID))
		if n := eval[int](p, `document.querySelectorAll(`+jsString(execRow(v.ExecutionID)+" .command")+`).length`); n != 0 {
			p.fail("opening the End form sent a command")
		}
		// The reason code is asked only for a failure.
		if !eval[bool](p, `document.querySelector(`+jsString(endForm(v.ExecutionID)+` input[list]`)+`).closest(".field").hidden`) {
			p.fail("the reason code shows for Completed")
		}
		p.do(chromedp.SendKeys(chromedp.CSS(endForm(v.ExecutionID)+" textarea"), "all tests pass"))
		p.shot("1-form")
		p.press(endForm(v.ExecutionID) + " button.end-submit")
		p.wait(execRow(v.ExecutionID) + ` .command[data-type="end"][data-status="applied"]`)
		states := p.endStates()
		if len(states) < 2 || states[0].Status != "sending" || !strings.Contains(states[0].Text, "End (completed)") ||
			states[len(states)-1].Status != "applied" {
			p.fail("the End command went through %+v; want sending then applied", states)
		}
		e := s.execution(human, v.ExecutionID)
		if e.Execution.Status != actionflow.ExecCompleted || e.Execution.End == nil || e.Execution.End.By != auth.RoleHuman ||
			e.Execution.End.Message != "all tests pass" {
			t.Fatalf("after End: %+v end %+v", e.Execution, e.Execution.End)
		}
		if slices.Contains(e.Controls, "end") {
			t.Fatalf("an ended execution advertises %v", e.Controls)
		}
		p.sectionStatus("history", v.ExecutionID, activity.LabelCompleted)
		p.waitJS("End no longer offered", `document.querySelector(`+jsString(execRow(v.ExecutionID)+` .controls button[data-control="end"]`)+`) === null`)
		if p.text(`.section[data-section="in_progress"] .count`) != "0" {
			p.fail("In progress still counts %q", p.text(`.section[data-section="in_progress"] .count`))
		}
		p.noNotice()
		p.shot("2-history")
	})

	// Failed needs a reason code (the form says so and sends nothing);
	// while another attempt owns the execution the End is saved
	// ("accepted"), then applied once the owner lets go; the branch is in
	// History as Failed, with the reason and message kept.
	t.Run("end failed, accepted then applied", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_end_failed"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("noop", `{}`, "c1"))
		s.waitAction(agent, v.ActionID)
		p.press(inSection("in_progress", v.ExecutionID))
		p.press(execRow(v.ExecutionID) + ` .controls button[data-control="end"]`)
		form := endForm(v.ExecutionID)
		p.press(form + ` input[value="failed"]`)
		p.press(form + " button.end-submit")
		p.wait(form + " .form-error:not([hidden])")
		if got := p.text(form + " .form-error"); !strings.Contains(got, "reason code") {
			p.fail("the form says %q", got)
		}
		if n := eval[int](p, `document.querySelectorAll(`+jsString(execRow(v.ExecutionID)+" .command")+`).length`); n != 0 {
			p.fail("an incomplete End was sent")
		}
		p.do(chromedp.SendKeys(chromedp.CSS(form+" input[list]"), "aborted"),
			chromedp.SendKeys(chromedp.CSS(form+" textarea"), "the user closed the tab"))
		if !eval[bool](p, `document.querySelector(`+jsString(form+" .form-error")+`).hidden`) {
			p.fail("the form still says %q after the reason was typed", p.text(form+" .form-error"))
		}
		p.shot("1-form")

		ctx := context.Background()
		owner, err := s.ctl.Acquire(ctx, v.ExecutionID, "att_ui_end")
		if err != nil {
			t.Fatal(err)
		}
		p.press(form + " button.end-submit")
		p.wait(execRow(v.ExecutionID) + ` .command[data-type="end"][data-status="accepted"]`)
		if got := p.text(execRow(v.ExecutionID) + ` .command[data-type="end"]`); !strings.Contains(got, "End (failed: aborted)") {
			p.fail("the command reads %q", got)
		}
		if st := s.execution(human, v.ExecutionID).Execution.Status; st != actionflow.ExecRunning {
			t.Fatalf("an End not applied yet changed the execution to %s", st)
		}
		p.shot("2-accepted")
		s.ctl.Release(ctx, owner)
		if err := s.ctl.Reconcile(ctx, v.ExecutionID); err != nil {
			t.Fatal(err)
		}
		p.wait(execRow(v.ExecutionID) + ` .command[data-type="end"][data-status="applied"]`)
		e := s.execution(human, v.ExecutionID).Execution
		if e.Status != actionflow.ExecFailed || e.End == nil || e.End.Reason != "aborted" || e.End.Message != "the user closed the tab" {
			t.Fatalf("after End: %+v end %+v", e, e.End)
		}
		p.sectionStatus("history", v.ExecutionID, activity.LabelFailed)
		p.noNotice()
		p.shot("3-history")
	})

	// The answer to End is lost after the server applied it: the command
	// says delivery unknown; "Retry the same command" sends the same
	// command id and version, which the server answers with the stored
	// record: applied once.
	t.Run("end: unknown delivery retries the same command", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_end_retry"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("noop", `{}`, "c1"))
		s.waitAction(agent, v.ActionID)
		p.press(inSection("in_progress", v.ExecutionID))
		p.press(execRow(v.ExecutionID) + ` .controls button[data-control="end"]`)
		version := s.execution(human, v.ExecutionID).Execution.Version
		// No event may tell the page the End applied: only its retry can.
		hold := make(chan struct{})
		s.holdEvents.Store(&hold)
		s.srv.CloseClientConnections()
		p.wait(`#live:not([data-state="live"])`)
		suffix := "/v1/executions/" + string(v.ExecutionID) + "/commands"
		s.dropSuffix.Store(&suffix)
		p.press(endForm(v.ExecutionID) + " button.end-submit")
		p.wait(execRow(v.ExecutionID) + ` .command[data-type="end"][data-status="unknown"]`)
		if code := <-s.dropped; code != http.StatusAccepted {
			t.Fatalf("the server answered the lost End with %d", code)
		}
		p.noNotice()
		p.shot("1-unknown")
		sent := eval[string](p, `document.querySelector(`+jsString(execRow(v.ExecutionID)+` .command[data-type="end"]`)+`).dataset.commandId`)
		p.press(execRow(v.ExecutionID) + ` .command[data-type="end"] button`)
		p.wait(execRow(v.ExecutionID) + ` .command[data-type="end"][data-status="applied"]`)
		s.holdEvents.Store(nil)
		close(hold)
		recs, err := s.ctl.Commands(context.Background(), v.ExecutionID, actionflow.Principal{Subject: "test", Role: "system"})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || string(recs[0].CommandID) != sent || recs[0].Status != "applied" || recs[0].ExpectedVersion != version {
			t.Fatalf("commands after the retry: %+v (the page sent %s)", recs, sent)
		}
		if e := s.execution(human, v.ExecutionID).Execution; e.Status != actionflow.ExecCompleted || e.Version != version+1 {
			t.Fatalf("after the retry: %+v", e)
		}
		p.sectionStatus("history", v.ExecutionID, activity.LabelCompleted)
		p.noNotice()
		p.shot("2-retried")
	})

	// An unknown outcome: the card needs an outcome and a note; Reconcile
	// shows the answer and "Sending…" at once, then the applied receipt;
	// the action takes the outcome (the receipt stays unknown), the branch
	// leaves Needs attention, and the receipt stays on screen.
	t.Run("reconcile", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_reconcile"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		p.watchControls()
		v := s.submit(agent, session, "k1", submitBody("flaky", `{"url":"https://pay.example/charge"}`, "c1"))
		s.waitAction(agent, v.ActionID)
		p.press(inSection("needs_attention", v.ExecutionID))
		card := reconcileCard(v.ActionID)
		p.wait(card + `[data-state="pending"]`)
		// Nothing is sent without an outcome and a note.
		p.press(card + " button.reconcile-submit")
		if got := p.text(card + " .card-status"); !strings.Contains(got, "succeeded or failed") {
			p.fail("the card says %q", got)
		}
		p.press(card + ` input[value="failed"]`)
		p.press(card + " button.reconcile-submit")
		if got := p.text(card + " .card-status"); !strings.Contains(got, "note") {
			p.fail("the card says %q", got)
		}
		if st := eval[string](p, `document.querySelector(`+jsString(card)+`).dataset.state`); st != "pending" {
			p.fail("an incomplete reconciliation went %q", st)
		}
		p.do(chromedp.SendKeys(chromedp.CSS(card+` textarea[id^="rec-note-"]`), "no charge in the provider's dashboard"))
		if got := p.text(card + " .card-status"); got != "" {
			p.fail("the card still says %q after the note was written", got)
		}
		p.do(chromedp.SendKeys(chromedp.CSS(card+` textarea[id^="rec-evidence-"]`), "GET /charges?ref=c1 -> []"))
		p.shot("1-form")
		p.press(card + " button.reconcile-submit")
		p.wait(card + `[data-state="answered"]`)
		states := p.reconcileStates(v.ActionID)
		if len(states) < 2 || states[0].State != "sending" || !strings.Contains(states[0].Status, "Sending") ||
			!strings.Contains(states[0].Answer, "Failed") || !strings.Contains(states[0].Answer, "no charge") ||
			states[len(states)-1].State != "answered" {
			p.fail("the card went through %+v; want sending (with the answer) then answered", states)
		}
		if got := p.text(card + " .card-status"); !strings.Contains(got, "Reconciled as Failed") || !strings.Contains(got, "applied") {
			p.fail("the receipt reads %q", got)
		}
		a := s.waitAction(agent, v.ActionID)
		if a.States.Outcome != lifecycle.OutcomeFailed || !a.States.Reconciled || a.Receipt == nil || a.Receipt.Outcome != lifecycle.OutcomeUnknown {
			t.Fatalf("after Reconcile: %+v receipt %+v", a.States, a.Receipt)
		}
		if r := a.Reconciliation; r == nil || r.Note != "no charge in the provider's dashboard" || r.Evidence != "GET /charges?ref=c1 -> []" ||
			r.ReconciledBy.Role != auth.RoleHuman || r.ReconciledBy.Origin != auth.OriginUI {
			t.Fatalf("reconciliation %+v", a.Reconciliation)
		}
		// Out of Needs attention; the execution still runs: In progress.
		p.sectionStatus("in_progress", v.ExecutionID, activity.LabelRunning)
		if got := p.text(`.section[data-section="needs_attention"] .count`); got != "0" {
			p.fail("Needs attention still counts %s", got)
		}
		p.wait(execRow(v.ExecutionID) + ` .action[data-action-id="` + string(v.ActionID) + `"] .badge[data-kind="outcome"][data-value="failed"]`)
		if got := p.text(card + " .card-status"); !strings.Contains(got, "Reconciled as Failed") {
			p.fail("the receipt is gone after the refresh: %q", got)
		}
		if n := s.unknown.calls.Load(); n != 1 {
			t.Fatalf("the operation was dispatched %d times", n)
		}
		p.noNotice()
		p.shot("2-reconciled")

		// A fresh page shows the stored reconciliation, not a form.
		q := openPage(t, browser, "reload", s.url+"/ui/#token="+human)
		q.ready()
		q.press(inSection("in_progress", v.ExecutionID))
		q.wait(card + `[data-state="reconciled"]`)
		if got := q.text(card); !strings.Contains(got, "Failed") || !strings.Contains(got, "no charge") {
			q.fail("the stored reconciliation reads %q", got)
		}
	})

	// The answer to Reconcile is lost after the server stored it: the
	// card says delivery is unknown and keeps the answer; Retry sends the
	// same request, which the server answers with the stored record.
	t.Run("reconcile: unknown delivery retries the same request", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_reconcile_retry"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("flaky", `{"url":"https://pay.example/refund"}`, "c1"))
		s.waitAction(agent, v.ActionID)
		p.press(inSection("needs_attention", v.ExecutionID))
		card := reconcileCard(v.ActionID)
		p.press(card + ` input[value="succeeded"]`)
		p.do(chromedp.SendKeys(chromedp.CSS(card+` textarea[id^="rec-note-"]`), "the refund is in the ledger"))
		suffix := "/v1/actions/" + string(v.ActionID) + "/reconciliation"
		s.dropSuffix.Store(&suffix)
		p.press(card + " button.reconcile-submit")
		p.wait(card + `[data-state="unknown"]`)
		if code := <-s.dropped; code != http.StatusCreated {
			t.Fatalf("the server answered the lost reconciliation with %d", code)
		}
		if got := p.text(card); !strings.Contains(got, "Delivery unknown") || !strings.Contains(got, "Your answer: Succeeded") {
			p.fail("the card reads %q", got)
		}
		p.noNotice() // an unknown delivery is not a confirmed failure
		p.shot("1-unknown")
		p.press(card + " button.retry")
		p.wait(card + `[data-state="answered"]`)
		if got := p.text(card + " .card-status"); !strings.Contains(got, "Reconciled as Succeeded") || !strings.Contains(got, "the refund is in the ledger") {
			p.fail("the receipt reads %q", got)
		}
		a := s.waitAction(agent, v.ActionID)
		if a.States.Outcome != lifecycle.OutcomeSucceeded || a.Reconciliation == nil || a.Reconciliation.Note != "the refund is in the ledger" {
			t.Fatalf("after the retry: %+v %+v", a.States, a.Reconciliation)
		}
		p.sectionStatus("in_progress", v.ExecutionID, activity.LabelRunning)
		p.noNotice()
		p.shot("2-retried")
	})

	// Someone else reconciled first: the page's different answer is a 409
	// that shows the first record, which stands; never shown as applied.
	t.Run("reconcile: 409 shows the first record", func(t *testing.T) {
		s := newUIStack(t)
		const session = "ses_reconcile_409"
		human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
		p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
		p.ready()
		v := s.submit(agent, session, "k1", submitBody("flaky", `{"url":"https://pay.example/charge"}`, "c1"))
		s.waitAction(agent, v.ActionID)
		p.press(inSection("needs_attention", v.ExecutionID))
		card := reconcileCard(v.ActionID)
		p.press(card + ` input[value="failed"]`)
		p.do(chromedp.SendKeys(chromedp.CSS(card+` textarea[id^="rec-note-"]`), "I think it failed"))
		other, err := s.issuer.IssueSubject("bob", auth.RoleHuman, session, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		r := s.do(req{method: "POST", path: "/v1/actions/" + string(v.ActionID) + "/reconciliation", token: other,
			body: actionflow.ReconcileRequest{Outcome: lifecycle.OutcomeSucceeded, Note: "bob saw the charge"}})
		if r.status != http.StatusCreated {
			t.Fatalf("bob's reconciliation: %d %s", r.status, r.body)
		}
		p.press(card + " button.reconcile-submit")
		p.wait(card + `[data-state="refused"]`)
		if got := p.text(card + " .answer"); got != "Your answer: Failed — “I think it failed”" {
			p.fail("the answer reads %q", got)
		}
		if got := p.text(card + " .card-status"); !strings.Contains(got, "Not applied") || !strings.Contains(got, "Succeeded by bob") ||
			!strings.Contains(got, "bob saw the charge") || strings.Contains(got, "· applied") {
			p.fail("the refusal reads %q", got)
		}
		a := s.waitAction(agent, v.ActionID)
		if a.States.Outcome != lifecycle.OutcomeSucceeded || a.Reconciliation == nil || a.Reconciliation.ReconciledBy.Subject != "bob" {
			t.Fatalf("the first reconciliation did not stand: %+v %+v", a.States, a.Reconciliation)
		}
		p.shot("refused")
	})
}
