// The policy view: the session's live policy (version, whether a change
// needs a replay first), and policy replay: a candidate document, a
// window, and how every recorded action of the window would have been
// decided under it (POST /v1/sessions/{id}/policy/replays). A replay is a
// dry run: nothing changes, and the automatic reviewer is not asked again
// (recorded verdicts are reused, and the report says so).

import { HttpError } from "./api.js";
import { h, short, time } from "./dom.js";

const enc = encodeURIComponent;
const WINDOWS = [["1h", 3600], ["24h", 86400], ["7 days", 7 * 86400], ["30 days", 30 * 86400]];

// mountPolicy wires the Policy button of the top bar to the view.
// ctx: {box, button, client, session, canReplay, live()}
export function mountPolicy(ctx) {
  const v = new PolicyView(ctx);
  ctx.button.hidden = !ctx.session;
  ctx.button.onclick = () => v.toggle();
  ctx.box.hidden = true;
  ctx.box.replaceChildren();
  return v;
}

class PolicyView {
  constructor(ctx) {
    this.ctx = ctx;
  }

  toggle() {
    if (!this.ctx.box.hidden) return this.close();
    this.open();
  }

  close() {
    this.ctx.box.hidden = true;
    this.ctx.button.setAttribute("aria-expanded", "false");
  }

  async open() {
    const { box, client, session } = this.ctx;
    box.hidden = false;
    this.ctx.button.setAttribute("aria-expanded", "true");
    box.replaceChildren(h("p", { class: "muted", text: "Loading the policy…" }));
    let doc;
    try {
      ({ data: doc } = await client.request("GET", "/v1/sessions/" + enc(session) + "/policy"));
    } catch (e) {
      if (!this.ctx.live()) return;
      box.replaceChildren(h("p", { class: "error", role: "alert", text: "The policy could not be read: " + e.message }));
      return;
    }
    if (!this.ctx.live()) return;
    this.build(doc);
  }

  build(doc) {
    const { box, canReplay } = this.ctx;
    const pretty = JSON.stringify(doc.policy, null, 2);
    this.candidateEl = h("textarea", { id: "replay-candidate", rows: 10, spellcheck: "false", "aria-label": "Candidate policy (JSON)" });
    this.candidateEl.value = pretty;
    this.windowEl = h("select", { id: "replay-window", "aria-label": "Window" },
      WINDOWS.map(([label, secs]) => h("option", { value: String(secs), selected: label === "24h", text: "the last " + label })));
    this.errorEl = h("p", { class: "error form-error", role: "alert", hidden: true });
    this.resultEl = h("div", { class: "replay-result", "aria-live": "polite" });
    this.submitEl = h("button", { type: "submit", class: "replay-submit", text: "Replay (dry run)", disabled: !canReplay });
    box.replaceChildren(
      h("header", { class: "policy-head" },
        h("h2", { id: "policy-title", text: "Policy" }),
        h("button", { type: "button", class: "link policy-close", text: "Close", onclick: () => this.close() })),
      h("p", { class: "policy-facts" },
        "Version ", h("code", { text: String(doc.version) }), " · label ", h("code", { text: doc.policy_version || "default" }),
        doc.require_replay ? h("span", { class: "badge require-replay", text: "changes need a replay within the hour" }) : null),
      h("details", { class: "policy-doc" }, h("summary", { text: "The live document" }), h("pre", { text: pretty })),
      h("form", { class: "replay-form", "aria-labelledby": "replay-title", novalidate: true, onsubmit: (e) => this.replay(e) },
        h("h3", { id: "replay-title", text: "Replay a candidate policy" }),
        h("p", { class: "muted", text: "Decides every recorded action of the window again under the candidate. Nothing changes; the automatic reviewer is not asked again (its recorded verdicts are reused)." }),
        h("label", { for: "replay-candidate", text: "Candidate (JSON)" }), this.candidateEl,
        h("div", { class: "form-actions" }, h("label", { for: "replay-window", text: "Actions of " }), this.windowEl, this.submitEl),
        canReplay ? null : h("p", { class: "muted", text: "Only the session's human owner can replay a policy (this token's role cannot)." }),
        this.errorEl),
      this.resultEl);
  }

  async replay(e) {
    e.preventDefault();
    const { client, session } = this.ctx;
    this.errorEl.hidden = true;
    let policy;
    try {
      policy = JSON.parse(this.candidateEl.value);
    } catch (err) {
      return this.fail("The candidate is not JSON: " + err.message);
    }
    const since = new Date(Date.now() - Number(this.windowEl.value) * 1000).toISOString();
    this.submitEl.disabled = true;
    this.resultEl.replaceChildren(h("p", { class: "muted", text: "Replaying…" }));
    try {
      const { data } = await client.request("POST", "/v1/sessions/" + enc(session) + "/policy/replays", { policy, since }, { timeout: 120000 });
      if (!this.ctx.live()) return;
      this.show(data);
    } catch (err) {
      if (!this.ctx.live()) return;
      this.resultEl.replaceChildren();
      this.fail(err instanceof HttpError ? (err.field ? err.field + ": " : "") + err.message : "No answer from the server: " + err.message);
    } finally {
      this.submitEl.disabled = false;
    }
  }

  fail(msg) {
    this.errorEl.textContent = msg;
    this.errorEl.hidden = false;
  }

  show(rep) {
    const changed = rep.replayed - rep.unchanged;
    this.resultEl.replaceChildren(
      h("p", { class: "replay-summary", "data-replay-id": rep.replay_id },
        h("strong", { text: rep.replayed + " actions replayed" }), ": " + rep.unchanged + " unchanged, ",
        h("strong", { class: changed ? "changed" : "", text: changed + " changed" }),
        rep.skipped ? "; " + rep.skipped + " skipped (refused before the permission engine, or undecided)" : "",
        " · reviewer verdicts: " + rep.verdicts_recorded + " recorded (reused), " + rep.verdicts_deterministic + " deterministic (no model)"),
      h("table", { class: "transitions", "aria-label": "Transitions" },
        h("thead", {}, h("tr", {}, h("th", { text: "Live" }), h("th", { text: "Candidate" }), h("th", { text: "Actions" }))),
        h("tbody", {}, rep.transitions.map((t) => h("tr", { "data-from": t.from, "data-to": t.to, class: t.from === t.to ? "same" : "moved" },
          h("td", {}, badge(t.from)), h("td", {}, badge(t.to)), h("td", { class: "num", text: String(t.count) }))))),
      rep.changes.length ? h("ol", { class: "changes", "aria-label": "Changed actions" }, rep.changes.map((c) =>
        h("li", { class: "change", "data-action-id": c.action_id },
          h("div", { class: "change-head" }, badge(c.from), " → ", badge(c.to), " ",
            h("code", { class: "tool", text: c.tool }), " ", h("code", { text: c.summary }),
            h("span", { class: "muted", title: c.action_id, text: " " + short(c.action_id) + " · " + time(c.created_at) })),
          h("dl", { class: "facts" },
            h("dt", { text: "Live" }), h("dd", { text: reason(c.live_reason) }),
            h("dt", { text: "Candidate" }), h("dd", { text: reason(c.candidate_reason) +
              (c.verdict === "recorded" ? " (reviewer verdict: recorded, reused)" : c.verdict === "deterministic" ? " (reviewer verdict: deterministic reviewer, no model)" : "") }))))) : null,
      rep.changes_truncated ? h("p", { class: "muted", text: "More actions changed than are listed; the counts cover them all." }) : null);
  }
}

function badge(p) {
  return h("span", { class: "badge", "data-value": p, text: p });
}

function reason(r) {
  return [r.code, r.source && "(" + r.source + (r.rule ? ": " + r.rule : "") + ")", r.detail].filter(Boolean).join(" ");
}
