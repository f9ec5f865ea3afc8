// Decision panels: one card per pending approval of the session, keyed by
// approval_id, above the composer. Each card owns its answer and its
// delivery status; a new card never takes focus or touches the composer.
//
// States (the card's data-state):
//   pending   the request waits; Approve / Decline are offered
//   sending   the answer was submitted; it is shown at once, with "Sending…"
//   answered  applied: the server decided and completed the wait (200)
//   accepted  saved, but the workflow has not heard it yet (202)
//   unknown   no answer from the server: Retry repeats the same request
//   refused   the request lost to a stored state (already decided by
//             someone else, expired, replaced, gone); never shown as approval
//   failed    the server refused the request itself (400, 403)
//   ended     never answered here, and no longer pending: expired,
//             cancelled, replaced, or decided by someone else (gone())
//
// A retry sends exactly the first request again (same approval, decision
// and digest). The server decides an approval once, so a retry can never
// run the operation twice: when the first request had in fact arrived, the
// retry answers 409 with that same decision by this same person, which is
// the receipt the first answer would have given.

import { HttpError } from "./api.js";
import { execNamed, h, time, when } from "./dom.js";

const STATUS_OF = { approve: "approved", decline: "declined" };
const WORD = { approve: "Approve", decline: "Decline" };

// commandOf picks the exact command an approval is about, when the tool's
// arguments name one (Bash-style tools), to show it prominently.
function commandOf(args) {
  if (!args || typeof args !== "object") return "";
  for (const k of ["command", "cmd", "script"]) {
    if (typeof args[k] === "string" && args[k] !== "") return args[k];
  }
  return "";
}

// riskBlock shows the reviewer's risk of the asked call: its level (high
// stands out: a red band and a "High risk" label, not only a colour) and
// its plain reasons; a model's reasons say they are model-generated.
function riskBlock(risk) {
  if (!risk || !risk.level) return null;
  const label = { low: "Low risk", medium: "Medium risk", high: "High risk" }[risk.level] || risk.level;
  return h("section", { class: "risk risk-" + risk.level, "data-risk": risk.level, "aria-label": label },
    h("p", { class: "risk-level" }, risk.level === "high" ? "⚠ " : "", h("strong", { text: label })),
    h("ul", { class: "risk-reasons" }, (risk.reasons || []).map((r) =>
      h("li", { class: r.model_generated ? "model" : "", "data-source": r.source },
        r.text, r.model_generated ? h("span", { class: "model-note", text: " (model-generated, " + r.source + ")" }) : null))));
}

function by(p) {
  if (!p) return "";
  return " by " + p.subject + (p.origin ? " (" + p.origin + ")" : "");
}

export class DecisionCard {
  // ctx: {client, subject, canDecide, execName(id): the execution's
  // heading or "", live(): bool, onSettled(card), onDismiss(card)}
  constructor(ap, ctx) {
    this.ap = ap;
    this.ctx = ctx;
    this.id = ap.approval_id;
    this.state = "pending";
    this.request = null; // the exact body, kept for a retry
    this.build();
  }

  build() {
    const ap = this.ap;
    const cmd = commandOf(ap.arguments);
    const titleID = "card-title-" + this.id;
    this.statusEl = h("p", { class: "card-status", role: "status" });
    this.answerEl = h("p", { class: "answer", hidden: true });
    this.approveBtn = h("button", { type: "button", class: "approve", "data-decision": "approve",
      "aria-label": "Approve " + ap.tool + (cmd ? ": " + cmd : ""), text: "Approve", onclick: () => this.submit("approve") });
    this.declineBtn = h("button", { type: "button", class: "decline", "data-decision": "decline",
      "aria-label": "Decline " + ap.tool + (cmd ? ": " + cmd : ""), text: "Decline", onclick: () => this.submit("decline") });
    this.retryBtn = h("button", { type: "button", class: "retry", hidden: true, text: "Retry",
      "aria-label": "Retry sending the same answer", onclick: () => this.send() });
    this.dismissBtn = h("button", { type: "button", class: "link dismiss", hidden: true, text: "Dismiss",
      "aria-label": "Dismiss this receipt", onclick: () => this.ctx.onDismiss(this) });
    const reason = ap.reason || {};
    this.execEl = h("span", { class: "exec-name", title: ap.execution_id });
    this.rename();
    this.el = h("article", { class: "card" + (ap.risk && ap.risk.level === "high" ? " high-risk" : ""), "data-approval-id": this.id, "data-action-id": ap.action_id,
      "data-execution-id": ap.execution_id, "data-state": this.state, "aria-labelledby": titleID },
      h("header", { class: "card-head" },
        this.titleEl = h("h3", { id: titleID }, "Approve ", h("code", { class: "tool", text: ap.tool }), "?"),
        h("span", { class: "badge waiting", text: "Waiting for your response" })),
      cmd ? h("pre", { class: "command", "aria-label": "Command" }, h("code", { text: cmd })) : null,
      riskBlock(ap.risk),
      h("details", { class: "args", open: !cmd || Object.keys(ap.arguments || {}).length > 1 },
        h("summary", { text: "Exact arguments" }),
        h("pre", { text: JSON.stringify(ap.arguments, null, 2) })),
      h("dl", { class: "facts" },
        h("dt", { text: "Digest" }), h("dd", {}, h("code", { class: "digest", text: ap.args_digest })),
        h("dt", { text: "Why" }), h("dd", { text: [reason.code, reason.source && "(" + reason.source + (reason.rule ? ": " + reason.rule : "") + ")", reason.detail].filter(Boolean).join(" ") }),
        h("dt", { text: "Execution" }), h("dd", {}, this.execEl, " · policy " + ap.policy_version + " · expires " + when(ap.expires_at))),
      this.answerEl,
      this.statusEl,
      h("div", { class: "card-actions" }, this.ctx.canDecide ? [this.approveBtn, this.declineBtn] : null, this.retryBtn, this.dismissBtn));
    if (!this.ctx.canDecide) this.statusEl.textContent = "Only the session's human owner can answer (this token's role cannot).";
  }

  // rename names the card's execution by its heading, once the page knows
  // it (app.js calls it after each Activity read).
  rename() {
    this.execEl.textContent = execNamed(this.ctx.execName, this.ap.execution_id);
  }

  setState(state, text) {
    this.state = state;
    this.el.dataset.state = state;
    this.statusEl.textContent = text || "";
    this.statusEl.classList.toggle("error", state === "failed" || state === "refused" || state === "ended");
    const open = state === "pending";
    this.approveBtn.hidden = this.declineBtn.hidden = !open;
    this.approveBtn.disabled = this.declineBtn.disabled = !open;
    this.retryBtn.hidden = state !== "unknown";
    this.dismissBtn.hidden = !["answered", "accepted", "refused", "failed", "ended"].includes(state);
    const badge = this.el.querySelector(".card-head .badge");
    badge.hidden = state !== "pending";
    if (state === "ended") this.titleEl.replaceChildren("No longer waiting: ", h("code", { class: "tool", text: this.ap.tool }));
    else if (!open) this.titleEl.replaceChildren("Your decision on ", h("code", { class: "tool", text: this.ap.tool }));
  }

  submit(decision) {
    if (this.state !== "pending" || !this.ctx.canDecide) return;
    this.request = { decision, digest: this.ap.args_digest };
    this.answerEl.hidden = false;
    this.answerEl.replaceChildren("Your answer: ", h("strong", { class: "answer-value", text: WORD[decision] }));
    this.send();
  }

  async send() {
    if (!this.request) return;
    const decision = this.request.decision;
    this.setState("sending", "Sending… " + WORD[decision]);
    this.retryBtn.disabled = true;
    try {
      const { status, data } = await this.ctx.client.request("POST", "/v1/approvals/" + encodeURIComponent(this.id), this.request);
      if (!this.ctx.live()) return;
      if (status === 202) {
        this.setState("accepted", WORD[decision] + "d · accepted: your decision is saved" + by(data.decided_by) +
          "; the workflow has not received it yet and recovery delivers it.");
      } else {
        this.answered(data);
      }
    } catch (e) {
      if (!this.ctx.live()) return;
      this.failed(e);
    } finally {
      this.retryBtn.disabled = false;
      this.ctx.onSettled(this);
    }
  }

  answered(ap) {
    const decision = this.request.decision;
    const what = decision === "approve" ? "the operation may now run." : "the operation will not run.";
    this.setState("answered", (decision === "approve" ? "Approved" : "Declined") + " · applied" + by(ap.decided_by) +
      (ap.decided_at ? " at " + time(ap.decided_at) : "") + ": " + what);
  }

  failed(e) {
    const decision = this.request.decision;
    if (!(e instanceof HttpError) || e.status >= 500) {
      // No answer, or the server could not finish: the decision may or
      // may not be saved. Keep the same request for a retry.
      this.setState("unknown", "Delivery unknown: your answer “" + WORD[decision] + "” may not have arrived. " +
        "Retry sends the same answer again; it cannot be applied twice.");
      return;
    }
    const cur = e.current && typeof e.current === "object" ? e.current : null;
    if (e.status === 409 && e.code === "already_decided" && cur && cur.status === STATUS_OF[decision] &&
        cur.decided_by && cur.decided_by.subject === this.ctx.subject) {
      this.answered(cur); // our first request had arrived
      return;
    }
    if (e.status === 409 || e.status === 404) {
      const not = decision === "approve" ? "Not approved" : "Not applied";
      let why = e.message;
      if (e.code === "already_decided" && cur) why = "this request was already " + cur.status + by(cur.decided_by) + ".";
      else if (e.code === "approval_expired") why = "the request expired before your answer arrived; expiry is never approval.";
      else if (e.code === "approval_superseded") why = "this request was replaced by a newer one.";
      else if (e.status === 404) why = "this request no longer exists.";
      this.setState("refused", not + ": " + why);
      return;
    }
    this.setState("failed", "Refused (" + e.status + "): " + e.message);
  }

  // gone: a read no longer lists the approval as pending and this card
  // never sent an answer. It reads the action's approval and says how the
  // request ended, rather than vanish: expiry or cancellation is never
  // approval. Until it knows, it stays as it was.
  async gone() {
    if (this.state !== "pending" || this.checking) return false;
    this.checking = true;
    try {
      const { data } = await this.ctx.client.request("GET", "/v1/actions/" + encodeURIComponent(this.ap.action_id));
      if (!this.ctx.live() || this.state !== "pending") return false;
      const ap = (data && data.approval) || {};
      if (ap.approval_id && ap.approval_id !== this.id && ap.status === "pending") {
        this.setState("ended", "Not approved: this request was replaced by a newer one (its own card).");
      } else if (ap.status === "approved" || ap.status === "declined") {
        this.setState("ended", "Decided elsewhere: " + ap.status + by(ap.decided_by) + (ap.decided_at ? " at " + time(ap.decided_at) : "") + ".");
      } else if (ap.status === "expired") {
        this.setState("ended", "Expired: nobody answered in time; expiry is never approval. The operation did not run.");
      } else if (ap.status === "cancelled") {
        this.setState("ended", "Cancelled: the execution no longer waits; not approved. The operation did not run.");
      } else if (ap.status === "superseded") {
        this.setState("ended", "Not approved: this request was replaced by a newer one.");
      } else if (ap.status !== "pending") {
        this.setState("ended", "No longer waiting" + (ap.status ? " (" + ap.status + ")" : "") + "; not approved.");
      }
      return this.state === "ended";
    } catch (e) {
      if (this.ctx.live() && e instanceof HttpError && e.status === 404) this.setState("ended", "This request no longer exists; not approved.");
      return this.state === "ended";
    } finally {
      this.checking = false;
    }
  }

  // closed: the approval is no longer pending. A card the owner never
  // answered disappears; a submitted one stays as its receipt.
  closed() {
    return this.state === "pending";
  }
}
