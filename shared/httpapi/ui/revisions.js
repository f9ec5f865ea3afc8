// The revision an execution runs on (issue 15): the revision it started
// on, the one its next action starts on (active: different once
// use_latest adopted a newer one), and its policy; and, when the policy
// paused it, why, with the specific differences. Nothing runs on another
// revision in its place: Continue selects again (under the policy then
// set), Retry is a separate new execution.

import { h, short } from "./dom.js";

const BLOCK = {
  revision_incompatible: "the live revision cannot resume this execution",
  revision_unavailable: "the revision it must run on can no longer be loaded",
};

// revisionInfo renders the revision line of an execution view's
// execution, and its revision block when there is one (null: nothing
// recorded, e.g. a server without revisions).
export function revisionInfo(x) {
  if (!x || (!x.active_revision && !x.started_revision && !x.revision_block)) return null;
  const adopted = x.started_revision && x.active_revision && x.started_revision !== x.active_revision;
  return [
    h("p", { class: "muted revision", "data-active-revision": x.active_revision || "", "data-policy": x.revision_policy || "" },
      "revision ",
      h("code", { title: x.active_revision || "", text: short(x.active_revision || "unknown") }),
      adopted ? h("span", { text: " (adopted; started on " }) : null,
      adopted ? h("code", { title: x.started_revision, text: short(x.started_revision) }) : null,
      adopted ? h("span", { text: ")" }) : null,
      h("span", { class: "badge revision-policy", "data-value": x.revision_policy || "keep_original", text: x.revision_policy || "keep_original" })),
    x.revision_block ? revisionBlock(x.revision_block) : null,
  ];
}

function revisionBlock(b) {
  const diffs = b.differences || [];
  return h("div", { class: "revision-block", role: "alert", "data-reason": b.reason },
    h("strong", { text: "Paused: " + b.reason }),
    h("p", { text: "Nothing more runs until you continue: " + (BLOCK[b.reason] || b.reason) +
      (b.candidate ? " (" + short(b.candidate) + (b.active ? " for " + short(b.active) : "") + ")." : ".") }),
    diffs.length ? h("ul", { class: "revision-differences", "aria-label": "Differences" }, diffs.map((d) => h("li", { text: d }))) : null,
    b.held && b.held.length ? h("p", { class: "muted", text: b.held.length === 1 ? "1 tool call is held, not started." : b.held.length + " tool calls are held, not started." }) : null,
    h("p", { class: "muted", text: "Continue selects the revision again (set the policy to keep_original to stay on the active one); Retry starts a separate new execution." }));
}
