// The question half of the decision panels above the composer (the
// approval half is app.js's applyApprovals with cards.js). One keyed
// QuestionCard per question request of the session, created when a read
// of GET /v1/sessions/{id}/questions first lists it and kept (with its
// draft) across later reads; a refresh of the page reads them again.
//
// A new card is appended, never focused: the composer keeps its focus,
// draft and target. A card the owner never submitted that stops being
// pending reads its final state and says it (expired, cancelled, answered
// elsewhere); a submitted one stays as its receipt until dismissed.

import { QuestionCard, showAnswer } from "./questions.js";
import { h } from "./dom.js";

export class QuestionPanels {
  // o: {box, client, session, canAnswer, live(): bool, onSettled(card), onChange()}
  constructor(o) {
    this.o = o;
    this.cards = new Map();
  }

  apply(list) {
    const o = this.o;
    const pending = new Set();
    list = list.filter((q) => q.session_id === o.session || !q.session_id);
    list.sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
    for (const q of list) {
      if (q.status && q.status !== "pending") continue;
      pending.add(q.question_id);
      if (this.cards.has(q.question_id)) continue;
      const card = new QuestionCard(q, {
        client: o.client,
        canAnswer: o.canAnswer,
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
      if (!pending.has(card.id) && card.state === "pending") card.gone().then(() => o.onChange());
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

  // key is what the details render depends on.
  key() {
    return [...this.cards.values()].map((c) => [c.id, c.req.action_id, c.state]);
  }
}

// questionReceipt is the line an action row in the branch details shows
// for its question request: waiting, or the receipt once it ended.
export function questionReceipt(card) {
  if (!card) return null;
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
