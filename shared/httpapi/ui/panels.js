// The question half of the decision panels above the composer (the
// approval half is app.js's applyApprovals with cards.js). One keyed
// QuestionCard per pending question request of the session, created when
// a read of GET /v1/sessions/{id}/questions?status=all first lists it and
// kept (with its draft) across later reads; a refresh of the page reads
// them again. The same read gives the ended requests (answered, skipped,
// expired, cancelled): the durable question records, which the branch
// details show as each tool call's receipt, also after a reload.
//
// A new card is appended, never focused: the composer keeps its focus,
// draft and target. A card the owner never submitted that stops being
// pending reads its final state and says it (expired, cancelled, answered
// elsewhere); a submitted one stays as its receipt until dismissed.

import { QuestionCard, showAnswer } from "./questions.js";
import { h } from "./dom.js";

export class QuestionPanels {
  // o: {box, client, session, canAnswer, execName(id), live(): bool, onSettled(card), onChange()}
  constructor(o) {
    this.o = o;
    this.cards = new Map();
    this.records = new Map(); // action_id -> the latest ended question record
  }

  apply(list) {
    const o = this.o;
    const pending = new Set();
    list = list.filter((q) => q.session_id === o.session || !q.session_id);
    list.sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
    const ended = new Map();
    for (const q of list) {
      if (q.status && q.status !== "pending") {
        ended.set(q.question_id, q);
        const prev = this.records.get(q.action_id);
        if (!prev || (q.generation || 0) >= (prev.generation || 0)) this.records.set(q.action_id, q);
        continue;
      }
      pending.add(q.question_id);
      if (this.cards.has(q.question_id)) continue;
      const card = new QuestionCard(q, {
        client: o.client,
        canAnswer: o.canAnswer,
        execName: o.execName,
        live: o.live,
        onSettled: (c) => o.onSettled(c),
        onDismiss: (c) => {
          c.el.remove();
          this.cards.delete(c.id);
          o.onChange();
        },
      });
      this.cards.set(q.question_id, card);
      o.box.append(card.el); // never focused
    }
    for (const card of this.cards.values()) {
      if (pending.has(card.id) || card.state !== "pending") continue;
      if (ended.has(card.id)) card.settled(ended.get(card.id));
      else card.gone().then(() => o.onChange());
    }
    o.onChange();
  }

  pendingCount() {
    return [...this.cards.values()].filter((c) => c.state === "pending").length;
  }

  forAction(actionID) {
    for (const c of this.cards.values()) if (c.req.action_id === actionID) return c;
    return null;
  }

  recordFor(actionID) {
    return this.records.get(actionID) || null;
  }

  // key is what the details render depends on.
  key() {
    return [[...this.cards.values()].map((c) => [c.id, c.req.action_id, c.state]),
      [...this.records.values()].map((q) => [q.question_id, q.status])];
  }
}

const ENDED = {
  answered: "Answered",
  declined: "Skipped: the request was declined; no answer",
  expired: "Expired: not answered",
  cancelled: "Cancelled: not answered",
};

// questionReceipt is the line an action row in the branch details shows
// for its question request: waiting, or the receipt once it ended (this
// page's card while it is open, else the stored record).
export function questionReceipt(card, rec) {
  if (!card || (card.state === "pending" && rec && rec.status !== "pending" && rec.question_id === card.id)) {
    return rec ? recordReceipt(rec) : null;
  }
  if (card.state === "pending") {
    return h("button", { type: "button", class: "link", "data-focus-key": "question:" + card.id,
      text: "Answer in the decision panel", onclick: () => card.el.scrollIntoView({ block: "nearest" }) });
  }
  const a = card.body && card.body.answers;
  return h("div", { class: "q-receipt", "data-question-id": card.id, "data-state": card.state },
    h("strong", { text: card.statusEl.textContent }),
    a && (card.state === "answered" || card.state === "accepted" || card.state === "sending" || card.state === "unknown")
      ? h("ul", { class: "answer-list" }, card.qs.map((q, i) => h("li", {},
        h("span", { class: "muted", text: (q.header || q.question || "") + ": " }),
        h("span", { text: showAnswer(q, a[q.id || "q" + (i + 1)]) }))))
      : null);
}

function recordReceipt(q) {
  const by = q.answered_by && q.answered_by.subject ? " by " + q.answered_by.subject : "";
  const answers = q.status === "answered" && q.answers && typeof q.answers === "object" ? q.answers : null;
  return h("div", { class: "q-receipt", "data-question-id": q.question_id, "data-state": q.status === "declined" ? "skipped" : q.status },
    h("strong", { text: (ENDED[q.status] || q.status) + (q.status === "answered" || q.status === "declined" ? by : "") +
      (q.reason && q.status !== "answered" ? " (" + q.reason + ")" : "") }),
    answers ? h("ul", { class: "answer-list" }, (q.questions || []).map((x, i) => h("li", {},
      h("span", { class: "muted", text: (x.header || x.question || "") + ": " }),
      h("span", { text: showAnswer(x, answers[x.id || "q" + (i + 1)]) })))) : null);
}
