// Question cards: one keyed card per pending question request of the
// session (GET /v1/sessions/{id}/questions), in the decision panels above
// the composer, next to the approval cards (cards.js). Specification 003,
// "User decision panels and receipts".
//
// A request holds one or more questions (single or multiple choice,
// confirmation, free text, a form), answered together. The card shows one
// question at a time with its header and option rows; Back / Next move
// between them and Collapse folds the card: both keep the draft and send
// nothing. Submit sends every answer as one command (POST
// /v1/questions/{id}/answer with a command_id made at Submit); Skip sends
// {"skip": true}, which declines the whole request.
//
// States (the card's data-state):
//   pending    the request waits; the draft is editable
//   sending    submitted: the submitted answer shows at once, "Sending…"
//   answered   applied: the answer reached the question (the receipt)
//   skipped    applied: the request was declined (Skip)
//   accepted   saved, not applied yet
//   unknown    no answer from the server: Retry sends the very same body
//              (same command_id, same answers), so nothing runs twice
//   expired, cancelled
//              the request ended without an answer; never an answer
//   refused    someone else answered first, or the request is gone
//   failed     the server refused the request itself (403)
// A 400 (an answer that does not fit the question) goes back to pending
// with the message on the question it names: the draft stays.

import { HttpError, newID } from "./api.js";
import { execNamed, h, time } from "./dom.js";

const TERMINAL = ["answered", "skipped", "accepted", "expired", "cancelled", "refused", "failed"];

// keyOf is the id a question's answer is keyed by in "answers".
function keyOf(q, i) {
  return q.id || "q" + (i + 1);
}

function kindOf(q) {
  if (q.kind) return q.kind;
  if (q.fields && q.fields.length) return "form";
  if (q.options && q.options.length) return q.multiSelect ? "multiple" : "single";
  return "text";
}

// empty: nothing chosen or written yet.
function empty(v) {
  return v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);
}

// show renders an answer value for people.
export function showAnswer(q, v) {
  if (v === undefined || v === null) return "—";
  if (typeof v === "boolean") return v ? "Yes" : "No";
  if (Array.isArray(v)) return v.join(", ");
  if (typeof v === "object") {
    return Object.entries(v).map(([k, x]) => {
      const f = (q.fields || []).find((f) => f.name === k);
      return (f && f.label ? f.label : k) + ": " + (typeof x === "boolean" ? (x ? "yes" : "no") : String(x));
    }).join("; ");
  }
  return String(v);
}

export class QuestionCard {
  // ctx: {client, canAnswer, execName(id): the execution's heading or "",
  // live(): bool, onSettled(card), onDismiss(card)}
  constructor(req, ctx) {
    this.req = req;
    this.ctx = ctx;
    this.id = req.question_id;
    this.qs = req.questions || [];
    this.step = 0;
    this.draft = {}; // key -> value; kept across Back/Next/Collapse and live updates
    this.state = "pending";
    this.body = null; // the exact request, kept for a retry
    this.fieldError = "";
    this.build();
    this.renderStep();
  }

  build() {
    const r = this.req;
    const titleID = "qcard-title-" + this.id;
    this.titleEl = h("h3", { id: titleID, text: this.askTitle() });
    this.stepEl = h("span", { class: "muted step" });
    this.collapseBtn = h("button", { type: "button", class: "link collapse", "aria-expanded": "true",
      "aria-controls": "qcard-body-" + this.id, text: "Collapse", onclick: () => this.toggle() });
    this.stepBody = h("div", { class: "q-step" });
    this.backBtn = h("button", { type: "button", class: "back", text: "Back", onclick: () => this.go(-1) });
    this.nextBtn = h("button", { type: "button", class: "next", text: "Next", onclick: () => this.go(1) });
    this.submitBtn = h("button", { type: "button", class: "submit", text: "Submit", onclick: () => this.submit(false) });
    this.skipBtn = h("button", { type: "button", class: "link skip", text: "Skip",
      "aria-label": "Skip: decline the whole request", onclick: () => this.submit(true) });
    this.retryBtn = h("button", { type: "button", class: "retry", hidden: true, text: "Retry",
      "aria-label": "Retry sending the same answer", onclick: () => this.send() });
    this.dismissBtn = h("button", { type: "button", class: "link dismiss", hidden: true, text: "Dismiss",
      "aria-label": "Dismiss this receipt", onclick: () => this.ctx.onDismiss(this) });
    this.answerEl = h("div", { class: "answer", hidden: true });
    this.statusEl = h("p", { class: "card-status", role: "status" });
    this.execEl = h("span", { class: "exec-name", title: r.execution_id });
    this.rename();
    this.controls = h("div", { class: "card-actions" },
      this.ctx.canAnswer ? [this.backBtn, this.nextBtn, this.submitBtn, this.skipBtn] : null);
    this.bodyEl = h("div", { id: "qcard-body-" + this.id, class: "q-body" }, this.stepBody, this.controls);
    this.el = h("article", { class: "card qcard", "data-question-id": this.id, "data-action-id": r.action_id,
      "data-execution-id": r.execution_id, "data-state": this.state, "data-step": "0", "aria-labelledby": titleID },
      h("header", { class: "card-head" }, this.titleEl, this.stepEl,
        h("span", { class: "badge waiting", text: "Waiting for your answer" }), this.collapseBtn),
      h("p", { class: "muted exec" }, "Execution ", this.execEl, r.created_at ? " · asked " + time(r.created_at) : null),
      this.bodyEl, this.answerEl, this.statusEl,
      h("div", { class: "card-actions" }, this.retryBtn, this.dismissBtn));
    if (!this.ctx.canAnswer) this.statusEl.textContent = "Only the session's human owner can answer (this token's role cannot).";
  }

  // rename names the card's execution by its heading, once the page knows
  // it (app.js calls it after each Activity read).
  rename() {
    this.execEl.textContent = execNamed(this.ctx.execName, this.req.execution_id);
  }

  askTitle() {
    return this.qs.length > 1 ? "Questions for you" : "A question for you";
  }

  toggle() {
    const open = this.bodyEl.hidden;
    this.bodyEl.hidden = !open;
    this.collapseBtn.textContent = open ? "Collapse" : "Expand";
    this.collapseBtn.setAttribute("aria-expanded", String(open));
    this.el.dataset.collapsed = open ? "" : "true";
  }

  go(d) {
    const n = this.step + d;
    if (n < 0 || n >= this.qs.length || this.state !== "pending") return;
    if (d > 0 && !this.check(this.step)) return;
    this.step = n;
    this.renderStep();
    // The owner is working in this card: when the button they pressed
    // disappears (Next on the last step becomes Submit), keep the focus in
    // the card, on the question's first field. Never the composer's.
    const a = document.activeElement;
    if (!a || a === document.body || a.hidden) {
      const first = this.stepBody.querySelector("input, textarea, select");
      if (first) first.focus();
    }
  }

  // check says whether the question at i is answered enough to leave it
  // forward; the server validates again.
  check(i) {
    const q = this.qs[i];
    const v = this.draft[keyOf(q, i)];
    let miss = "";
    if (kindOf(q) === "form") {
      const f = (q.fields || []).find((f) => f.required && empty((v || {})[f.name]));
      if (f) miss = (f.label || f.name) + " is required.";
    } else if (empty(v)) {
      miss = "Choose or write an answer first (or Skip the whole request).";
    }
    this.fieldError = miss;
    this.renderError();
    return !miss;
  }

  renderError() {
    const el = this.stepBody.querySelector(".form-error");
    if (el) {
      el.textContent = this.fieldError;
      el.hidden = !this.fieldError;
    }
  }

  renderStep() {
    const i = this.step;
    const q = this.qs[i] || {};
    const key = keyOf(q, i);
    const last = i === this.qs.length - 1;
    this.el.dataset.step = String(i);
    this.stepEl.textContent = this.qs.length > 1 ? (i + 1) + " of " + this.qs.length : "";
    this.backBtn.hidden = this.qs.length < 2;
    this.backBtn.disabled = i === 0;
    this.nextBtn.hidden = last;
    this.submitBtn.hidden = !last;
    const name = "q-" + this.id + "-" + key;
    this.stepBody.replaceChildren(
      q.header ? h("span", { class: "badge q-header", text: q.header }) : null,
      h("p", { class: "q-text", id: name + "-text", text: q.question || "" }),
      this.input(q, key, name),
      h("p", { class: "form-error error", role: "alert", hidden: !this.fieldError, text: this.fieldError }));
  }

  set(key, v) {
    this.draft[key] = v;
    if (this.fieldError) {
      this.fieldError = "";
      this.renderError();
    }
  }

  input(q, key, name) {
    const v = this.draft[key];
    const dis = this.state !== "pending" || !this.ctx.canAnswer;
    switch (kindOf(q)) {
      case "single":
      case "multiple": {
        const multi = kindOf(q) === "multiple" || q.multiSelect;
        const chosen = multi ? (Array.isArray(v) ? v : []) : v;
        return h("fieldset", { class: "options", "aria-labelledby": name + "-text" }, (q.options || []).map((o, j) => {
          const id = name + "-" + j;
          const on = multi ? chosen.includes(o.label) : chosen === o.label;
          return h("label", { class: "option", for: id },
            h("input", { id, type: multi ? "checkbox" : "radio", name, value: o.label, checked: on, disabled: dis,
              onchange: (e) => {
                if (multi) {
                  const cur = Array.isArray(this.draft[key]) ? this.draft[key].filter((x) => x !== o.label) : [];
                  if (e.target.checked) cur.push(o.label);
                  this.set(key, (q.options || []).map((x) => x.label).filter((l) => cur.includes(l)));
                } else this.set(key, o.label);
              } }),
            h("span", { class: "option-label", text: o.label }),
            o.description ? h("span", { class: "muted option-desc", text: o.description }) : null);
        }));
      }
      case "confirm":
        return h("fieldset", { class: "options", "aria-labelledby": name + "-text" }, [["Yes", true], ["No", false]].map(([l, b]) =>
          h("label", { class: "option", for: name + "-" + l },
            h("input", { id: name + "-" + l, type: "radio", name, value: l, checked: v === b, disabled: dis, onchange: () => this.set(key, b) }),
            h("span", { class: "option-label", text: l }))));
      case "form":
        return h("div", { class: "q-form" }, (q.fields || []).map((f) => this.field(key, name, f, dis)));
      default:
        return h("textarea", { class: "q-textarea", rows: 2, "aria-labelledby": name + "-text", disabled: dis,
          text: typeof v === "string" ? v : "", oninput: (e) => this.set(key, e.target.value) });
    }
  }

  field(key, name, f, dis) {
    const cur = this.draft[key] || {};
    const id = name + "-" + f.name;
    const put = (x) => this.set(key, Object.assign({}, this.draft[key] || {}, { [f.name]: x }));
    const label = h("label", { for: id, text: (f.label || f.name) + (f.required ? " (required)" : "") });
    let input;
    if (f.enum && f.enum.length) {
      // Enum values are JSON values (strings or numbers): chosen by index.
      input = h("select", { id, name: f.name, disabled: dis, onchange: (e) => put(e.target.value === "" ? undefined : f.enum[Number(e.target.value)]) },
        h("option", { value: "", text: "—" }),
        f.enum.map((x, j) => h("option", { value: String(j), text: String(x), selected: cur[f.name] === x })));
    } else if (f.type === "boolean") {
      input = h("input", { id, name: f.name, type: "checkbox", checked: cur[f.name] === true, disabled: dis, onchange: (e) => put(e.target.checked) });
    } else if (f.type === "number" || f.type === "integer") {
      input = h("input", { id, name: f.name, type: "number", step: f.type === "integer" ? "1" : "any", disabled: dis,
        value: cur[f.name] === undefined ? null : String(cur[f.name]),
        oninput: (e) => put(e.target.value === "" ? undefined : Number(e.target.value)) });
    } else {
      input = h("input", { id, name: f.name, type: "text", disabled: dis, value: cur[f.name] === undefined ? null : String(cur[f.name]),
        oninput: (e) => put(e.target.value === "" ? undefined : e.target.value) });
    }
    return h("div", { class: "field", "data-field": f.name }, label, input);
  }

  // answers is the draft as the API takes it: one value per question key.
  answers() {
    const out = {};
    this.qs.forEach((q, i) => {
      const k = keyOf(q, i);
      let v = this.draft[k];
      if (kindOf(q) === "form") v = Object.fromEntries(Object.entries(v || {}).filter(([, x]) => x !== undefined));
      if (v !== undefined) out[k] = v;
    });
    return out;
  }

  submit(skip) {
    if (this.state !== "pending" || !this.ctx.canAnswer) return;
    if (!skip) {
      for (let i = 0; i < this.qs.length; i++) {
        if (!this.check(i)) {
          if (i !== this.step) {
            const err = this.fieldError;
            this.step = i;
            this.renderStep();
            this.fieldError = err;
            this.renderError();
          }
          return;
        }
      }
    }
    this.body = skip ? { command_id: newID("cmd"), skip: true } : { command_id: newID("cmd"), answers: this.answers() };
    this.showSubmitted();
    this.send();
  }

  // showSubmitted writes the submitted answer itself on the card.
  showSubmitted() {
    this.answerEl.hidden = false;
    if (this.body.skip) {
      this.answerEl.replaceChildren("Your answer: ", h("strong", { class: "answer-value", text: "Skip (decline the whole request)" }));
      return;
    }
    const a = this.body.answers;
    this.answerEl.replaceChildren(h("span", { text: "Your answer:" }), h("ul", { class: "answer-list" }, this.qs.map((q, i) =>
      h("li", {}, h("span", { class: "muted", text: (q.header || q.question || keyOf(q, i)) + ": " }),
        h("strong", { class: "answer-value", text: showAnswer(q, a[keyOf(q, i)]) })))));
  }

  setState(state, text) {
    this.state = state;
    this.el.dataset.state = state;
    this.statusEl.textContent = text || "";
    this.statusEl.classList.toggle("error", ["failed", "refused", "expired", "cancelled"].includes(state));
    const open = state === "pending";
    this.bodyEl.hidden = !open || this.el.dataset.collapsed === "true";
    this.collapseBtn.hidden = this.stepEl.hidden = !open;
    for (const b of [this.backBtn, this.nextBtn, this.submitBtn, this.skipBtn]) b.disabled = !open;
    if (open) this.renderStep();
    this.retryBtn.hidden = state !== "unknown";
    this.dismissBtn.hidden = !TERMINAL.includes(state);
    this.el.querySelector(".card-head .badge").hidden = !open;
    this.titleEl.textContent = open ? this.askTitle() : this.qs.length > 1 ? "Your answers" : "Your answer";
    if (state === "expired" || state === "cancelled") this.titleEl.textContent = "Question " + state;
  }

  async send() {
    if (!this.body) return;
    this.setState("sending", "Sending…");
    this.retryBtn.disabled = true;
    try {
      const { status, data } = await this.ctx.client.request("POST", "/v1/questions/" + encodeURIComponent(this.id) + "/answer", this.body);
      if (!this.ctx.live()) return;
      this.applied(status, data);
    } catch (e) {
      if (!this.ctx.live()) return;
      this.failed(e);
    } finally {
      this.retryBtn.disabled = false;
      this.ctx.onSettled(this);
    }
  }

  applied(status, data) {
    const q = (data && (data.question || data)) || {};
    if (status === 202 || (data && data.status === "accepted" && !q.answered_at)) {
      this.setState("accepted", "Accepted: your answer is saved; the agent has not received it yet and recovery delivers it.");
      return;
    }
    this.receipt(q);
  }

  // receipt: the request's final state as the server reports it.
  receipt(q) {
    const st = q.status || (this.body && this.body.skip ? "declined" : "answered");
    const by = q.answered_by && q.answered_by.subject ? " by " + q.answered_by.subject : "";
    const at = q.answered_at ? " at " + time(q.answered_at) : "";
    if (st === "declined") this.setState("skipped", "Skipped · applied" + by + at + ": the request was declined; the agent gets no answer.");
    else if (st === "answered") this.setState("answered", "Answered · applied" + by + at + ": the agent continues with your answer.");
    else this.ended(st);
  }

  ended(st) {
    if (st === "expired") this.setState("expired", "Expired: the request ended before an answer; nothing was answered.");
    else if (st === "cancelled") this.setState("cancelled", "Cancelled: the execution no longer waits; nothing was answered.");
    else this.setState("refused", "Not answered: the request is " + st + ".");
  }

  failed(e) {
    if (!(e instanceof HttpError) || e.status >= 500) {
      // The answer may or may not be saved: keep the same body for Retry.
      this.setState("unknown", "Delivery unknown: your answer may not have arrived. Retry sends the same answer " +
        "with the same command; it cannot be applied twice.");
      return;
    }
    const cur = e.current && typeof e.current === "object" ? e.current : null;
    if (e.status === 400 && this.body && !this.body.skip) {
      // The answer does not fit: back to the draft, at the question named.
      const m = /^answers\.([^.[\]]+)(?:\.(.+))?$/.exec(e.field || "");
      const i = m ? this.qs.findIndex((q, j) => keyOf(q, j) === m[1]) : -1;
      const f = i >= 0 && m[2] ? (this.qs[i].fields || []).find((x) => x.name === m[2]) : null;
      this.body = null;
      this.answerEl.hidden = true;
      this.setState("pending", "");
      if (i >= 0) this.step = i;
      this.fieldError = "Not sent: " + (f ? (f.label || f.name) + ": " : m && m[2] ? m[2] + ": " : "") + e.message;
      this.renderStep();
      return;
    }
    if (e.status === 409 && e.code === "question_superseded") {
      return this.setState("refused", "Not applied: this request was replaced by a newer one; answer that one (its own card).");
    }
    if (e.status === 409 && cur) {
      if (cur.status === "expired" || cur.status === "cancelled") return this.ended(cur.status);
      if (this.mine(cur)) return this.receipt(cur); // our first request had arrived
      const what = cur.status === "declined" ? "declined (skipped)" : cur.status;
      this.setState("refused", "Not applied: this request was already " + what +
        (cur.answered_by && cur.answered_by.subject ? " by " + cur.answered_by.subject : "") + ".");
      return;
    }
    if (e.status === 409 && /expired/.test(e.code)) return this.ended("expired");
    if (e.status === 409 && /cancel/.test(e.code)) return this.ended("cancelled");
    if (e.status === 404) return this.setState("refused", "Not applied: this request no longer exists.");
    if (e.status === 409) return this.setState("refused", "Not applied: " + e.message);
    this.setState("failed", "Refused (" + e.status + "): " + e.message);
  }

  // mine: the stored answer is the one this card sent.
  mine(cur) {
    if (cur.command_id && this.body && cur.command_id === this.body.command_id) return true;
    if (this.body.skip) return cur.status === "declined";
    return cur.status === "answered" && JSON.stringify(canon(cur.answers || cur.answer)) === JSON.stringify(canon(this.body.answers));
  }

  // settled: a read lists the request, never submitted here, as ended.
  settled(q) {
    if (this.state !== "pending") return;
    if (q.status === "answered" || q.status === "declined") {
      this.setState("refused", "Answered elsewhere: this request was " + (q.status === "declined" ? "skipped" : "answered") +
        (q.answered_by && q.answered_by.subject ? " by " + q.answered_by.subject : "") + ".");
    } else this.ended(q.status);
  }

  // gone: a refresh no longer lists the request as pending. A card never
  // submitted reads its final state (expired, cancelled, answered
  // elsewhere) so it can say so, rather than vanish.
  async gone() {
    if (this.state !== "pending" || this.checking) return;
    this.checking = true;
    try {
      const { data } = await this.ctx.client.request("GET", "/v1/questions/" + encodeURIComponent(this.id));
      if (!this.ctx.live() || this.state !== "pending") return;
      const q = (data && (data.question || data)) || {};
      if (q.status === "pending") return;
      this.settled(q.status ? q : { status: "gone" });
    } catch (e) {
      if (!this.ctx.live()) return;
      if (e instanceof HttpError && e.status === 404) this.setState("refused", "Not answered: this request no longer exists.");
    } finally {
      this.checking = false;
    }
  }

  terminal() {
    return TERMINAL.includes(this.state);
  }
}

// canon orders object keys so two equal answers compare equal.
function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  return v;
}
