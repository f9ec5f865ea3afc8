// The Reconcile card of an unknown outcome ("Unresolved tool result"):
// after checking the operation's effects, the owner says what happened
// (succeeded or failed), with a note and optional evidence text
// (POST /v1/actions/{action_id}/reconciliation). The receipt stays unknown
// and sealed; the reconciliation is stored beside it once.
//
// It has the decision cards' delivery semantics (cards.js). States (the
// card's data-state):
//   pending     the form is open
//   sending     submitted: the answer is shown at once, with "Sending…"
//   answered    applied: the server stored this reconciliation (201), or
//               had stored this very request already (200)
//   unknown     no answer from the server: Retry sends the same request
//   refused     another reconciliation was applied first (409: its record
//               is shown), or the outcome is no longer unknown
//   failed      the server refused the request itself (400, 403)
//   reconciled  read from the stored record (someone reconciled it, this
//               page did not send it)
//
// A retry sends exactly the first request again (same outcome, note and
// evidence): the server reconciles an action once, and answers the same
// request again with the stored record, so a retry can never apply a
// second, different reconciliation.

import { HttpError } from "./api.js";
import { h, time } from "./dom.js";

const WORD = { succeeded: "Succeeded", failed: "Failed" };

function by(p) {
  if (!p) return "";
  return " by " + p.subject + (p.origin ? " (" + p.origin + ")" : "");
}

// record describes a stored reconciliation for people.
function record(rec) {
  return (WORD[rec.outcome] || rec.outcome) + by(rec.reconciled_by) + (rec.reconciled_at ? " at " + time(rec.reconciled_at) : "") +
    ": “" + rec.note + "”";
}

export class ReconcileCard {
  // a: the action row ({action_id, tool}); ctx: {client, subject,
  // canDecide, live(): bool, onSettled(card)}
  constructor(a, ctx) {
    this.a = a;
    this.ctx = ctx;
    this.id = a.action_id;
    this.state = "pending";
    this.request = null; // the exact body, kept for a retry
    this.build();
  }

  build() {
    const id = (name) => "rec-" + name + "-" + this.id;
    const key = (name) => "reconcile:" + this.id + ":" + name;
    const radio = (value) => h("label", { class: "choice" },
      h("input", { type: "radio", name: id("outcome"), value, "data-focus-key": key(value) }), " " + WORD[value]);
    this.noteEl = h("textarea", { id: id("note"), rows: 2, "data-focus-key": key("note"), placeholder: "What you checked, and what you found" });
    this.evidenceEl = h("textarea", { id: id("evidence"), rows: 2, "data-focus-key": key("evidence"),
      placeholder: "Optional: output, a log line, a link" });
    this.answerEl = h("p", { class: "answer", hidden: true });
    this.statusEl = h("p", { class: "card-status", role: "status" });
    this.submitBtn = h("button", { type: "submit", class: "reconcile-submit", "data-focus-key": key("submit"), text: "Reconcile",
      "aria-label": "Reconcile the unknown outcome of " + this.a.tool });
    this.retryBtn = h("button", { type: "button", class: "retry", hidden: true, text: "Retry", "data-focus-key": key("retry"),
      "aria-label": "Retry sending the same reconciliation", onclick: () => this.send() });
    this.fields = h("div", { class: "reconcile-fields" },
      h("fieldset", { class: "choices" }, h("legend", { text: "What happened?" }), radio("succeeded"), radio("failed")),
      h("div", { class: "field" }, h("label", { for: id("note"), text: "Note (required)" }), this.noteEl),
      h("div", { class: "field" }, h("label", { for: id("evidence"), text: "Evidence (optional)" }), this.evidenceEl));
    this.el = h("form", { class: "reconcile-card", "data-action-id": this.id, "data-state": this.state, novalidate: true,
      "aria-label": "Reconcile " + this.a.tool, onsubmit: (e) => this.submit(e), oninput: () => this.typed() },
      this.fields, this.answerEl, this.statusEl,
      h("div", { class: "card-actions" }, this.submitBtn, this.retryBtn));
    if (!this.ctx.canDecide) {
      this.setInputs(false);
      this.submitBtn.disabled = true;
      this.statusEl.textContent = "Only the session's human owner can reconcile (this token's role cannot).";
    }
  }

  setInputs(on) {
    for (const el of this.fields.querySelectorAll("input, textarea")) el.disabled = !on;
  }

  setState(state, text) {
    this.state = state;
    this.el.dataset.state = state;
    this.statusEl.textContent = text || "";
    this.statusEl.classList.toggle("error", state === "failed" || state === "refused");
    const open = state === "pending";
    this.fields.hidden = !open;
    this.setInputs(open && this.ctx.canDecide);
    this.submitBtn.hidden = !open;
    this.submitBtn.disabled = !open || !this.ctx.canDecide;
    this.retryBtn.hidden = state !== "unknown";
  }

  // settled: the card holds a receipt (or a refusal); nothing to send.
  settled() {
    return this.state !== "pending" && this.state !== "sending" && this.state !== "unknown";
  }

  // typed clears what an incomplete submission said, once the owner
  // changes the form.
  typed() {
    if (this.state !== "pending" || !this.ctx.canDecide) return;
    this.statusEl.textContent = "";
    this.statusEl.classList.remove("error");
  }

  submit(e) {
    e.preventDefault();
    if (this.state !== "pending" || !this.ctx.canDecide) return;
    const checked = this.fields.querySelector("input[type=radio]:checked");
    const note = this.noteEl.value.trim();
    if (!checked || !note) {
      this.statusEl.textContent = !checked ? "Choose what happened: succeeded or failed." : "Write a note: say what you checked.";
      this.statusEl.classList.add("error");
      return;
    }
    const evidence = this.evidenceEl.value.trim();
    this.request = { outcome: checked.value, note };
    if (evidence) this.request.evidence = evidence;
    this.answerEl.hidden = false;
    this.answerEl.replaceChildren(...["Your answer: ", h("strong", { class: "answer-value", text: WORD[checked.value] }),
      " — “" + note + "”", evidence ? h("span", { class: "muted", text: " (with evidence)" }) : null].filter(Boolean));
    this.send();
  }

  async send() {
    if (!this.request) return;
    this.setState("sending", "Sending… " + WORD[this.request.outcome]);
    this.retryBtn.disabled = true;
    try {
      const { data } = await this.ctx.client.request("POST", "/v1/actions/" + encodeURIComponent(this.id) + "/reconciliation", this.request);
      if (!this.ctx.live()) return;
      this.answered(data);
    } catch (e) {
      if (!this.ctx.live()) return;
      this.failed(e);
    } finally {
      this.retryBtn.disabled = false;
      this.ctx.onSettled(this);
    }
  }

  answered(rec) {
    this.setState("answered", "Reconciled as " + record(rec) + " · applied: the outcome is now " + rec.outcome +
      "; the sealed receipt still says unknown.");
  }

  failed(e) {
    const outcome = this.request.outcome;
    if (!(e instanceof HttpError) || e.status >= 500) {
      // No answer, or the server could not finish: the reconciliation may
      // or may not be stored. Keep the same request for a retry.
      this.setState("unknown", "Delivery unknown: your answer “" + WORD[outcome] + "” may not have arrived. " +
        "Retry sends the same answer again; it cannot be applied twice.");
      return;
    }
    const cur = e.current && typeof e.current === "object" ? e.current : null;
    if (e.status === 409 && e.code === "already_reconciled" && cur) {
      this.setState("refused", "Not applied: this result was already reconciled as " + record(cur) + ". That first record stands.");
      return;
    }
    if (e.status === 409 && e.code === "not_reconcilable") {
      const now = cur && cur.states ? cur.states.outcome : "";
      this.setState("refused", "Not applied: the outcome is no longer unknown" + (now ? " (now " + now + ")" : "") + ".");
      return;
    }
    if (e.status === 404) {
      this.setState("refused", "Not applied: this action no longer exists.");
      return;
    }
    this.setState("failed", "Refused (" + e.status + "): " + e.message);
  }

  // known shows a reconciliation read from the server, when this card has
  // not sent one (another page, the CLI, or before a reload).
  known(rec) {
    if (this.state !== "pending" || !rec) return;
    this.setState("reconciled", "Reconciled as " + record(rec) + ".");
  }
}
