// Activity: the lifecycle's browser UI. Plain HTML, CSS and ES modules,
// embedded in the API binary and served at /ui/; no build step.
//
// It is an ordinary client of the /v1 API. The bearer token comes from the
// URL fragment (#token=..., which browsers never send to a server), is kept
// in sessionStorage (this tab only) and removed from the address bar at
// once; it never goes into a query string. The session, subject and role
// shown come from the token's claims, decoded here for display only: the
// server authorizes every request.
//
// What it shows (specification 003, "Activity and control" and "User
// decision panels and receipts"):
//   - Activity: Needs attention / In progress / History, one row per
//     conversation branch, with the counts the server computed;
//   - branch details: a short branch heading, the execution count, one row
//     per execution with its tool calls (tool, argument summary) and their three states (permission,
//     outcome, delivery) as badges; a request appears only in its execution
//     row; an unknown outcome says "Reconciliation required" with a
//     Reconcile card (reconcile.js: succeeded or failed, a note, optional
//     evidence; the decision cards' sending → applied receipts) and the
//     recovery controls the execution advertises; each execution offers
//     only the controls it advertises (GET /v1/executions/{id}), sent with a
//     fresh command_id and the execution's version, shown "accepted" (saved)
//     then "applied" (took effect); End opens a form first (end.js:
//     completed, or failed with a reason code and a message);
//   - headings: branch and execution rows are named by the server's
//     heading (the title given at start, else the first tool call and a
//     summary of its arguments; "· fork"/"· retry" and "Forked from …"
//     say how one came to be), never by an id;
//   - an execution's background processes (processes.js): command,
//     status, start time, an Output panel that follows the output, Stop;
//     a lost one is a "Background process lost" card (Needs attention)
//     with Acknowledge;
//   - decision panels above the composer: one card per pending approval
//     (cards.js) and per pending question request (panels.js,
//     questions.js), each naming its execution; an action row in the
//     details says its question is waiting, then shows its receipt;
//   - a composer whose draft and focus new cards never disturb; it sends
//     Steer instructions to the selected execution;
//   - from every action, a link to the console view of its state machine
//     execution (machine.html).
//
// Live updates come from the session's event stream (events.js); every
// relevant event re-reads Activity and approvals (debounced).
//
// Errors: nothing is reported while loading, reconnecting or catching up
// with the event log. A notice needs a confirmed failed request (the
// server answered with an error) owned by the session on screen: every
// request carries the generation of the session view that sent it, and a
// late answer for a previous session (or token) is dropped. Failed reads
// keep the records on screen and are retried automatically.

import { Client, HttpError, claims, newID } from "./api.js";
import { follow } from "./events.js";
import { DecisionCard } from "./cards.js";
import { EndForm, endLabel } from "./end.js";
import { ReconcileCard } from "./reconcile.js";
import { QuestionPanels, questionReceipt } from "./panels.js";
import { Processes } from "./processes.js";
import { mountPolicy } from "./policy.js";
import { revisionInfo } from "./revisions.js";
import { h, plural, time } from "./dom.js";

const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;

const TOKEN_KEY = "lifecycle.token";
const SESSION_KEY = "lifecycle.session"; // admin tokens name no session
const draftKey = (session) => "lifecycle.draft." + session;

const SECTIONS = [
  ["needs_attention", "Needs attention", "Nothing needs your attention."],
  ["in_progress", "In progress", "Nothing is running."],
  ["history", "History", "No ended branches yet."],
];
const INCOMPLETE = "Ended · response record incomplete";
const CONTROL_LABELS = { pause: "Pause", continue: "Continue", step: "Step", steer: "Steer…", end: "End…", cancel: "Cancel", fork: "Fork", retry: "Retry" };
const RECOVERY = { retry: "Retry in a new execution", fork: "Fork from the saved point", cancel: "Cancel the execution" };
const COMMAND_TEXT = {
  sending: "Sending…",
  accepted: "accepted: saved, not applied yet",
  applied: "applied",
  rejected: "rejected",
  failed: "refused",
  unknown: "delivery unknown",
};
// A command's status only moves forward, whichever of the response and
// its event arrives first.
const RANK = { sending: 0, unknown: 0, failed: 0, accepted: 1, applied: 2, rejected: 2 };

let generation = 0;
let S = null; // the session on screen; replaced whole when it changes

function live(s) {
  return s === S && !s.abort.signal.aborted;
}

function isAbort(e) {
  return e && (e.name === "AbortError" || (S && e === S.abort.signal.reason));
}

// ---- token and session ----------------------------------------------------

function tokenFromFragment() {
  const m = location.hash.match(/(?:^#|&)token=([^&]+)/);
  if (!m) return "";
  // The fragment holds a credential: drop it from the address bar and
  // the history entry before anything else happens.
  history.replaceState(null, "", location.pathname);
  try {
    return decodeURIComponent(m[1]);
  } catch (e) {
    return "";
  }
}

function boot() {
  $("login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    adopt($("token-input").value.trim());
    $("token-input").value = "";
  });
  $("forget").addEventListener("click", () => signOut(""));
  $("session-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const id = $("session-input").value.trim();
    if (!id || !S || !S.claims) return;
    sessionStorage.setItem(SESSION_KEY, id);
    openSession(S.token, S.claims, id);
  });
  $("notice-dismiss").addEventListener("click", () => { $("notice").hidden = true; });
  const text = $("composer-text");
  text.addEventListener("input", () => {
    if (!S || !S.session) return;
    sessionStorage.setItem(draftKey(S.session), text.value);
    updateComposer(S);
  });
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    if (S) sendSteer(S);
  });
  window.addEventListener("hashchange", () => {
    const t = tokenFromFragment();
    if (t) adopt(t);
  });
  const t = tokenFromFragment() || sessionStorage.getItem(TOKEN_KEY) || "";
  if (t) adopt(t);
  else showLogin("");
}

function adopt(token) {
  const c = claims(token);
  if (!c || !c.role) return showLogin("That is not a lifecycle token.");
  if (typeof c.exp === "number" && c.exp * 1000 < Date.now()) return showLogin("The token has expired; ask for a new one.");
  sessionStorage.setItem(TOKEN_KEY, token);
  let session = c.sid || "";
  if (!session && c.role === "admin") session = sessionStorage.getItem(SESSION_KEY) || "";
  openSession(token, c, session);
}

function signOut(msg) {
  if (S) S.abort.abort();
  S = null;
  generation++;
  sessionStorage.removeItem(TOKEN_KEY);
  showLogin(msg);
}

function showLogin(msg) {
  $("login").hidden = false;
  $("app").hidden = true;
  $("who").replaceChildren();
  $("live").hidden = true;
  $("forget").hidden = true;
  $("login-message").textContent = msg || "";
  $("login-message").hidden = !msg;
}

function unauthorized(s, e) {
  if (!live(s)) return;
  signOut("The server refused the token" + (e && e.message ? ": " + e.message : "."));
}

// openSession replaces everything session-scoped: cards, details, notices,
// commands, the event cursor. Work still in flight for the previous
// session finds itself no longer live and drops its answer.
function openSession(token, c, session) {
  if (S) S.abort.abort();
  generation++;
  S = {
    gen: generation, token, claims: c, session, client: new Client(token), abort: new AbortController(),
    activity: null, activityKey: "", detailsKey: "", selected: "", loaded: false,
    execViews: new Map(), receipts: new Map(), commands: new Map(), cards: new Map(),
    composerTarget: "", steer: null, armed: null,
    timer: 0, refreshing: false, dirty: false, retryDelay: 500,
    readNotice: false,
  };
  const s = S;
  s.questions = new QuestionPanels({
    box: $("decisions"), client: s.client, session, canAnswer: canAct(s), execName: (id) => cardName(s, id), live: () => live(s),
    onSettled: (c) => {
      if (!live(s)) return;
      if (c.state === "failed" || c.state === "refused") notice(s, "Your answer to a question was not applied: " + c.statusEl.textContent);
      scheduleRefresh(s, 0);
    },
    onChange: () => {
      if (!live(s)) return;
      updateDecisionsHeading(s);
      renderDetails(s);
    },
  });
  s.processes = new Processes({
    client: s.client, canAct: canAct(s), live: () => live(s), signal: s.abort.signal,
    onChange: () => {
      if (!live(s)) return;
      renderDetails(s);
      scheduleRefresh(s, 0);
    },
    onSettled: (text) => notice(s, text),
  });
  s.policy = mountPolicy({ box: $("policy"), button: $("policy-open"), client: s.client, session, canReplay: canAct(s), live: () => live(s) });
  $("login").hidden = true;
  $("app").hidden = false;
  $("forget").hidden = false;
  $("notice").hidden = true;
  $("decisions").replaceChildren();
  renderHeader(s);
  const text = $("composer-text");
  text.value = session ? sessionStorage.getItem(draftKey(session)) || "" : "";
  $("composer-status").textContent = "";
  renderActivity(s);
  renderDetails(s);
  updateComposer(s);
  $("session-form").hidden = !(c.role === "admin" && !c.sid);
  $("session-input").value = session;
  if (!session) {
    $("live").hidden = true;
    return;
  }
  document.title = "Activity · " + session;
  scheduleRefresh(s, 0);
  follow({
    client: s.client, session, after: 0, signal: s.abort.signal,
    onEvent: (ev) => onEvent(s, ev),
    onState: (st) => setLive(s, st),
    onUnauthorized: () => unauthorized(s),
  });
}

function canAct(s) {
  return s.claims.role === "human" || s.claims.role === "admin";
}

function renderHeader(s) {
  const c = s.claims;
  const exp = typeof c.exp === "number" ? new Date(c.exp * 1000) : null;
  $("who").replaceChildren(
    h("span", { class: "session-id" }, "Session ", h("code", { text: s.session || "—" })),
    h("span", { class: "subject", text: (c.sub || "unknown") + " · " + c.role }),
    exp ? h("span", { class: "muted", text: "token until " + exp.toLocaleTimeString() }) : null);
}

function setLive(s, state) {
  if (!live(s)) return;
  const el = $("live");
  el.hidden = false;
  const was = el.dataset.state;
  el.dataset.state = state;
  el.textContent = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…" }[state] || state;
  // Back after a gap: events may have been missed while the read was
  // down only if the cursor was lost, but re-reading is cheap and exact.
  if (state === "live" && was === "reconnecting") scheduleRefresh(s, 0);
}

// notice shows a confirmed failure of the session on screen, never one
// that belongs to a previous session.
function notice(s, text) {
  if (!live(s)) return;
  $("notice-text").textContent = text;
  $("notice").hidden = false;
}

function clearNotice(s) {
  if (live(s)) $("notice").hidden = true;
}

// ---- reading --------------------------------------------------------------

function onEvent(s, ev) {
  if (!live(s)) return;
  if (ev.type && ev.type.startsWith("command.") && ev.data && ev.data.command_id) {
    const cmd = s.commands.get(ev.data.command_id);
    if (cmd) {
      advance(cmd, ev.data.status, ev.data.reason);
      renderDetails(s);
      updateComposer(s);
    }
  }
  scheduleRefresh(s);
}

function scheduleRefresh(s, ms) {
  if (!live(s) || s.timer) return;
  s.timer = setTimeout(() => {
    s.timer = 0;
    refresh(s);
  }, ms === undefined ? 120 : ms);
}

function get(s, path) {
  return s.client.request("GET", path, undefined, { signal: s.abort.signal }).then((r) => r.data);
}

async function refresh(s) {
  if (!live(s)) return;
  if (s.refreshing) {
    s.dirty = true;
    return;
  }
  s.refreshing = true;
  try {
    const base = "/v1/sessions/" + enc(s.session);
    const [aps, act, qs] = await Promise.all([get(s, base + "/approvals"), get(s, base + "/activity"), getQuestions(s, base)]);
    if (!live(s)) return;
    s.loaded = true;
    s.retryDelay = 500;
    if (s.readNotice) {
      s.readNotice = false;
      clearNotice(s);
    }
    applyApprovals(s, aps.approvals || []);
    if (qs) s.questions.apply(qs.questions || []);
    s.activity = act;
    nameCards(s);
    // The details' extra reads first, so Activity and the details change
    // together and never disagree on screen.
    await loadDetails(s);
    if (!live(s)) return;
    renderActivity(s);
    renderDetails(s);
    updateComposer(s);
  } catch (e) {
    if (!live(s) || isAbort(e)) return;
    if (e instanceof HttpError && e.status === 401) return unauthorized(s, e);
    if (e instanceof HttpError) {
      s.readNotice = true;
      notice(s, "Could not read this session (" + e.status + " " + (e.code || "") + "): " + e.message +
        ". The records on screen are kept; retrying.");
    }
    // Unconfirmed (no answer): retry quietly; the records stay.
    const d = s.retryDelay;
    s.retryDelay = Math.min(d * 2, 15000);
    scheduleRefresh(s, d);
  } finally {
    s.refreshing = false;
    if (s.dirty && live(s)) {
      s.dirty = false;
      scheduleRefresh(s, 0);
    }
  }
}

// getQuestions reads the session's question requests (pending ones are
// cards, ended ones are receipts in the details); a server
// without the questions route (404 route_not_found) has none to offer.
function getQuestions(s, base) {
  return get(s, base + "/questions?status=all").catch((e) => {
    if (e instanceof HttpError && e.status === 404 && e.code !== "session_not_found") return null;
    throw e;
  });
}

function allRows(s) {
  const a = s.activity;
  return a ? [...a.needs_attention, ...a.in_progress, ...a.history] : [];
}

function selectedRow(s) {
  return allRows(s).find((r) => r.branch_id === s.selected) || null;
}

// loadDetails reads what the selected branch's rows need beyond Activity:
// each own execution's version and advertised controls, and the receipts
// of unknown outcomes (what to check). A failed read keeps what was read
// before; an execution never read offers no control.
async function loadDetails(s) {
  const row = selectedRow(s);
  if (!row) return;
  const own = row.executions.filter((e) => !e.shared);
  const reads = own.map((e) => get(s, "/v1/executions/" + enc(e.execution_id)).then((v) => s.execViews.set(e.execution_id, v)));
  for (const e of row.executions) {
    for (const a of e.actions) {
      if (needsActionRead(s, a)) {
        reads.push(get(s, "/v1/actions/" + enc(a.action_id)).then((v) => {
          if (v.receipt) s.receipts.set(a.action_id, v.receipt);
          if (v.reconciliation) reconcileCard(s, a).known(v.reconciliation);
        }));
      }
    }
  }
  const res = await Promise.allSettled(reads);
  for (const r of res) {
    if (r.status === "rejected" && r.reason instanceof HttpError && r.reason.status === 401) throw r.reason;
  }
  if (!s.composerTarget) {
    for (let i = own.length - 1; i >= 0; i--) {
      const v = s.execViews.get(own[i].execution_id);
      if (v && v.controls.includes("steer")) {
        s.composerTarget = own[i].execution_id;
        break;
      }
    }
  }
}

// ---- decision panels ------------------------------------------------------

function applyApprovals(s, list) {
  const box = $("decisions");
  const pending = new Set();
  list.sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
  for (const ap of list) {
    if (ap.status !== "pending" || ap.session_id !== s.session) continue;
    pending.add(ap.approval_id);
    if (s.cards.has(ap.approval_id)) continue;
    const card = new DecisionCard(ap, {
      client: s.client,
      subject: s.claims.sub,
      canDecide: canAct(s),
      execName: (id) => cardName(s, id),
      live: () => live(s),
      onSettled: (c) => {
        if (!live(s)) return;
        if (c.state === "failed" || c.state === "refused") {
          // A confirmed failure of this session's request: the card says
          // what happened; the notice makes sure it is seen.
          notice(s, "Your answer to " + c.ap.tool + " was not applied: " + c.statusEl.textContent);
        }
        scheduleRefresh(s, 0);
      },
      onDismiss: (c) => {
        c.el.remove();
        s.cards.delete(c.id);
        updateDecisionsHeading(s);
      },
    });
    s.cards.set(ap.approval_id, card);
    box.append(card.el); // never focused: the composer keeps focus
  }
  for (const [id, card] of s.cards) {
    // Never answered here and no longer pending: the card says how it
    // ended (cards.js gone()) and stays until dismissed.
    if (!pending.has(id) && card.closed()) card.gone().then((changed) => { if (changed && live(s)) updateDecisionsHeading(s); });
  }
  updateDecisionsHeading(s);
}

// cardName is how a decision card names its execution: its quoted
// heading once Activity lists it, else "" (the card says it in words).
function cardName(s, id) {
  const e = findExec(s, id);
  return e ? "“" + execHeading(e) + "”" : "";
}

// nameCards names every card's execution by the Activity just read (a card
// made before its execution was listed learns its heading here).
function nameCards(s) {
  for (const c of s.cards.values()) c.rename();
  for (const c of s.questions.cards.values()) c.rename();
}

function updateDecisionsHeading(s) {
  const n = [...s.cards.values()].filter((c) => c.state === "pending").length + s.questions.pendingCount();
  $("decisions").setAttribute("aria-label", n ? plural(n, "decision", "decisions") + " waiting for you" : "Decisions");
  $("decisions").hidden = s.cards.size === 0 && s.questions.cards.size === 0;
}

// ---- Activity -------------------------------------------------------------

// keepFocus re-renders a container and puts the focus back on the element
// with the same data-focus-key, so a live update never steals it.
function keepFocus(box, render) {
  const a = document.activeElement;
  const key = a && box.contains(a) ? a.dataset.focusKey : "";
  render();
  if (key) {
    const again = box.querySelector('[data-focus-key="' + CSS.escape(key) + '"]');
    if (again) again.focus();
  }
}

function renderActivity(s) {
  const key = JSON.stringify([s.activity, s.selected, s.loaded]);
  if (key === s.activityKey) return;
  s.activityKey = key;
  const box = $("activity");
  keepFocus(box, () => {
    box.replaceChildren(...SECTIONS.map(([name, title, empty]) => {
      const rows = s.activity ? s.activity[name] || [] : [];
      const count = s.activity ? s.activity.counts[name] : null;
      return h("section", { class: "section", "data-section": name, "aria-labelledby": "h-" + name },
        h("h2", { id: "h-" + name }, title, " ", h("span", { class: "count", "data-count": count === null ? "" : count, text: count === null ? "" : String(count) })),
        !s.loaded ? h("p", { class: "muted", text: s.session ? "Loading…" : "Choose a session." })
          : rows.length === 0 ? h("p", { class: "muted empty", text: empty })
            : h("ul", { class: "rows" }, rows.map((r) => branchRow(s, r))));
    }));
  });
}

function branchRow(s, r) {
  const incomplete = r.status === INCOMPLETE;
  return h("li", {},
    h("button", {
      type: "button", class: "branch" + (incomplete ? " incomplete" : ""), "data-branch-id": r.branch_id,
      "data-execution-ids": r.executions.map((e) => e.execution_id).join(" "), "data-focus-key": "branch:" + r.branch_id,
      "aria-current": r.branch_id === s.selected ? "true" : null, "aria-controls": "details",
      title: incomplete ? "The owner ended; only the model response record is missing. This does not claim success." : null,
      onclick: () => select(s, r.branch_id),
    },
    h("span", { class: "heading", text: r.heading }),
    h("span", { class: "status", "data-status": r.status, text: r.status }),
    h("span", { class: "meta", text: plural(r.execution_count, "execution", "executions") + " · " + time(r.updated_at) }),
    attentionLine(r)));
}

// attentionLine names, in a Needs attention row, what needs the user
// besides the decision panels' cards (a lost background process, ...).
function attentionLine(r) {
  const items = (r.attention || []).filter((at) => at.kind === "process_lost");
  if (!items.length) return null;
  return h("span", { class: "attention", "data-kinds": items.map((at) => at.kind).join(" "),
    text: items.map((at) => at.label + (at.detail ? ": " + at.detail : "")).join(" · ") });
}

function select(s, branch) {
  if (!live(s)) return;
  if (s.selected !== branch) s.composerTarget = "";
  s.selected = branch;
  renderActivity(s);
  renderDetails(s);
  loadDetails(s).then(() => {
    if (!live(s)) return;
    renderDetails(s);
    updateComposer(s);
  }, () => {});
}

// ---- branch details ---------------------------------------------------------

function renderDetails(s) {
  const row = selectedRow(s);
  const own = row ? row.executions.map((e) => e.execution_id) : [];
  const key = JSON.stringify([s.selected, row, own.map((id) => s.execViews.get(id) || null),
    [...s.commands.values()].filter((c) => own.includes(c.exec)).map((c) => [c, c.child && execName(s, c.child)]),
    [...s.receipts.entries()], s.composerTarget, s.armed,
    own.map((id) => [...s.cards.values()].filter((c) => c.ap.execution_id === id).map((c) => c.id)), s.questions.key(), s.processes.key()]);
  if (key === s.detailsKey) return;
  s.detailsKey = key;
  const box = $("details");
  keepFocus(box, () => {
    if (!s.selected) {
      box.replaceChildren(h("p", { class: "muted placeholder", text: "Select a branch to see its executions." }));
      return;
    }
    if (!row) {
      box.replaceChildren(h("p", { class: "muted placeholder", text: s.loaded ? "This branch is no longer listed." : "Loading…" }));
      return;
    }
    box.replaceChildren(...[
      h("header", { class: "details-head" },
        h("h2", { id: "details-title", text: row.heading }),
        h("span", { class: "count exec-count", text: plural(row.execution_count, "execution", "executions") }),
        h("span", { class: "status", "data-status": row.status, text: row.status })),
      row.status === INCOMPLETE ? h("p", { class: "note", text: "The owner ended; only the model response record is missing. No wait or control is pending. This does not claim success." }) : null,
      h("ol", { class: "executions", "aria-labelledby": "details-title" }, row.executions.map((e) => executionItem(s, e, row))),
    ].filter(Boolean));
  });
}

function executionItem(s, e, row) {
  const v = e.shared ? null : s.execViews.get(e.execution_id);
  return h("li", { class: "execution", "data-execution-id": e.execution_id, "data-status": e.status },
    h("div", { class: "exec-head" },
      h("span", { class: "badge exec-label", "data-label": e.label, text: e.label }),
      h("span", { class: "exec-heading", title: e.execution_id, text: execHeading(e) }),
      origin(s, e),
      e.shared ? h("span", { class: "badge shared", title: "An earlier execution of the branch this one forked from", text: "shared" }) : null,
      s.composerTarget === e.execution_id && v && v.controls.includes("steer") ? h("span", { class: "badge target", text: "composer target" }) : null,
      h("time", { datetime: e.created_at, class: "muted", text: time(e.created_at) })),
    v ? revisionInfo(v.execution) : null,
    e.actions.length ? h("ul", { class: "actions" }, e.actions.map((a) => actionItem(s, e, v, a))) : h("p", { class: "muted", text: "No tool calls yet." }),
    modelRequests(e),
    s.processes.list(e),
    (row.attention || []).filter((at) => at.kind === "process_lost" && at.execution_id === e.execution_id && !e.shared)
      .map((at) => s.processes.lostCard(at)),
    v ? controlsBar(s, e, v) : null,
    commandList(s, e.execution_id));
}

// execHeading is an execution's short human heading (the server's: its
// title, else its first tool call, " · fork" or " · retry" when it is
// one); never an id, which stays in the tooltip.
function execHeading(e) {
  return e.heading || (e.kind || "execution");
}

// findExec finds an execution of the session on screen by id.
function findExec(s, id) {
  for (const r of allRows(s)) {
    const e = r.executions.find((x) => x.execution_id === id);
    if (e) return e;
  }
  return null;
}

// ORIGIN says in words how a fork or retry came to be (the server marks
// its heading with the same word).
const ORIGIN = { " · fork": "Forked from", " · retry": "Retry of" };

function origin(s, e) {
  if (!e.parent_id) return null;
  const word = Object.keys(ORIGIN).find((k) => (e.heading || "").endsWith(k));
  if (!word) return null; // a child task says nothing more
  const p = findExec(s, e.parent_id);
  return h("span", { class: "origin muted", "data-origin": word.slice(3), title: e.parent_id,
    text: ORIGIN[word] + " " + (p ? "“" + execHeading(p) + "”" : "an earlier execution") });
}

// execName names an execution in words: its heading when it is on screen.
function execName(s, id) {
  const e = findExec(s, id);
  return e ? "“" + execHeading(e) + "”" : "a new execution";
}

// modelRequests lists an execution's model (provider) requests: status,
// token usage, and the error code of one that failed or was closed
// incomplete (no terminal event). A failed request is not an answer.
function modelRequests(e) {
  const ms = e.model_requests || [];
  if (!ms.length) return null;
  return h("ul", { class: "model-requests", "aria-label": "Model requests" }, ms.map((m) =>
    h("li", { class: "model-request", "data-request-id": m.request_id, "data-status": m.status },
      h("code", { class: "model", title: m.request_id, text: m.provider + " · " + m.model }),
      h("span", { class: "badge model-status", "data-value": m.status, text: m.purpose === "reviewer" ? "review " + m.status : m.status }),
      h("span", { class: "muted usage", text: m.usage.input_tokens + " in · " + m.usage.output_tokens + " out tokens" }),
      m.error_code ? h("span", { class: "muted reason", text: m.error_code }) : null)));
}

function badge(kind, value) {
  return h("span", { class: "badge state " + kind, "data-kind": kind, "data-value": value, text: kind + ": " + value });
}

function actionItem(s, e, v, a) {
  const st = a.states || {};
  const card = a.approval_id ? s.cards.get(a.approval_id) : null;
  return h("li", { class: "action", "data-action-id": a.action_id, "data-label": a.label },
    h("div", { class: "action-head" },
      h("code", { class: "tool", text: a.tool }),
      a.summary ? h("code", { class: "summary", text: a.summary }) : null,
      h("span", { class: "action-label label-" + a.label.toLowerCase().replace(/[^a-z]+/g, "-"), text: a.label }),
      a.reason ? h("span", { class: "muted reason", text: "reason: " + a.reason }) : null,
      a.sandbox ? h("span", { class: "muted sandbox", "data-sandbox": a.sandbox, text: "sandbox: " + a.sandbox }) : null,
      // The console view of its state machine execution (machine.js).
      h("a", { class: "machine-link", href: "machine.html#action=" + enc(a.action_id), text: "State machine" })),
    h("div", { class: "badges", role: "group", "aria-label": "States of " + a.tool },
      badge("permission", st.permission || "undecided"),
      badge("outcome", st.outcome || "open"),
      badge("delivery", st.delivery || "pending")),
    card && card.state === "pending" ? h("button", { type: "button", class: "link", "data-focus-key": "answer:" + a.action_id,
      text: "Answer in the decision panel", onclick: () => card.el.scrollIntoView({ block: "nearest" }) }) : null,
    questionReceipt(s.questions.forAction(a.action_id), s.questions.recordFor(a.action_id)),
    st.outcome === "unknown" || st.reconciled ? reconcile(s, e, v, a) : null);
}

// reconcile is the unknown-outcome card: what to check, the Reconcile
// form (reconcile.js), and the recovery controls the execution advertises.
// Once reconciled it keeps the receipt of the reconciliation.
function reconcile(s, e, v, a) {
  const rc = s.receipts.get(a.action_id);
  const open = a.states.outcome === "unknown";
  const acts = v ? v.controls.filter((c) => c in RECOVERY) : [];
  return h("div", { class: "reconcile", role: "group", "aria-label": (open ? "Reconciliation required for " : "Reconciled result of ") + a.tool },
    h("strong", { text: open ? "Reconciliation required" : "Reconciled" }),
    open ? h("p", { text: rc && rc.reconciliation ? rc.reconciliation
      : "The operation may have started; check its effects. It is never re-dispatched automatically." }) : null,
    rc && rc.error_code ? h("p", { class: "muted", text: "Evidence: " + rc.error_code + (rc.error ? " — " + rc.error : "") }) : null,
    reconcileCard(s, a).el,
    !open ? null
      : !v ? null // not read yet: offer nothing rather than guess
      : acts.length
      ? h("div", { class: "recovery" }, acts.map((c) => h("button", { type: "button", class: "recovery-action", "data-control": c,
        "data-focus-key": "rec:" + e.execution_id + ":" + c, disabled: !canAct(s), onclick: () => control(s, e.execution_id, c) }, RECOVERY[c])))
      : h("p", { class: "muted", text: "This execution advertises no recovery control now." }));
}

function controlsBar(s, e, v) {
  if (!v.controls.length) return h("p", { class: "muted controls-none", text: "No controls are available for this execution now." });
  return [h("div", { class: "controls", role: "group", "aria-label": "Controls of " + execHeading(e) },
    v.controls.map((c) => {
      const armed = c === "cancel" && s.armed && s.armed.exec === e.execution_id && s.armed.until > Date.now();
      return h("button", {
        type: "button", class: "control" + (armed ? " armed" : ""), "data-control": c, "data-focus-key": "ctl:" + e.execution_id + ":" + c,
        "aria-label": (armed ? "Confirm cancel" : (CONTROL_LABELS[c] || c).replace("…", "")) + " " + execHeading(e),
        disabled: !canAct(s), title: canAct(s) ? null : "Only the session's human owner can control executions",
        onclick: () => control(s, e.execution_id, c),
      }, armed ? "Confirm cancel" : CONTROL_LABELS[c] || c);
    })), endPanel(s, e.execution_id, v)];
}

function commandList(s, exec) {
  const cmds = [...s.commands.values()].filter((c) => c.exec === exec).slice(-5);
  if (!cmds.length) return null;
  return h("ul", { class: "commands", "aria-label": "Commands sent" }, cmds.map((c) =>
    h("li", { class: "command", "data-command-id": c.id, "data-type": c.type, "data-status": c.status },
      h("span", { text: commandName(c) + ": " }),
      h("span", { class: "command-status " + (c.status === "failed" || c.status === "rejected" ? "error" : ""),
        text: COMMAND_TEXT[c.status] + (c.reason ? " (" + c.reason + ")" : "") + (c.child ? " → " + execName(s, c.child) : "") }),
      c.status === "unknown" ? h("button", { type: "button", class: "link", "data-focus-key": "retry:" + c.id, text: "Retry the same command",
        onclick: () => sendCommand(s, c) }) : null)));
}

// ---- controls ---------------------------------------------------------------

function control(s, exec, type) {
  if (!live(s) || !canAct(s)) return;
  if (type === "end") return toggleEnd(s, exec);
  if (type === "steer") {
    s.composerTarget = exec;
    renderDetails(s);
    updateComposer(s);
    $("composer-text").focus(); // the owner asked for it
    return;
  }
  if (type === "cancel" && !(s.armed && s.armed.exec === exec && s.armed.until > Date.now())) {
    // Cancelling cannot be undone: ask once more, in place.
    s.armed = { exec, until: Date.now() + 5000 };
    renderDetails(s);
    setTimeout(() => { if (live(s) && s.armed && s.armed.exec === exec) { s.armed = null; renderDetails(s); } }, 5100);
    return;
  }
  s.armed = null;
  const cmd = newCommand(s, exec, type);
  if (cmd) sendCommand(s, cmd);
}

function newCommand(s, exec, type, payload) {
  const v = s.execViews.get(exec);
  if (!v || !v.controls.includes(type)) return null; // only what it advertises
  const cmd = { id: newID("cmd"), exec, type, expected: v.execution.version, payload, status: "sending", reason: "", child: "" };
  s.commands.set(cmd.id, cmd);
  return cmd;
}

function advance(cmd, status, reason) {
  if (!(status in RANK)) return;
  if (RANK[status] < RANK[cmd.status] && cmd.status !== "unknown") return;
  cmd.status = status;
  if (reason) cmd.reason = reason;
}

// sendCommand sends (or, after an unknown delivery, re-sends) one command:
// the same command_id, expected_version and payload every time, so the
// command service applies it at most once.
async function sendCommand(s, cmd) {
  cmd.status = "sending";
  cmd.reason = "";
  renderDetails(s);
  updateComposer(s);
  const body = { command_id: cmd.id, type: cmd.type, expected_version: cmd.expected };
  if (cmd.payload) body.payload = cmd.payload;
  try {
    const { data } = await s.client.request("POST", "/v1/executions/" + enc(cmd.exec) + "/commands", body, { signal: s.abort.signal });
    if (!live(s)) return;
    advance(cmd, data.status, data.reason);
    if (data.child_execution_id) cmd.child = data.child_execution_id;
  } catch (e) {
    if (!live(s) || isAbort(e)) return;
    if (e instanceof HttpError && e.status === 401) return unauthorized(s, e);
    if (e instanceof HttpError && e.status < 500) {
      cmd.status = "failed";
      cmd.reason = e.status === 409 && /version/.test(e.code) ? "the execution changed since you saw it; its controls were refreshed" : e.message;
      notice(s, (CONTROL_LABELS[cmd.type] || cmd.type).replace("…", "") + " was refused: " + cmd.reason + ".");
    } else {
      cmd.status = "unknown";
    }
  }
  renderDetails(s);
  updateComposer(s);
  scheduleRefresh(s, 0);
}

// ---- End and Reconcile --------------------------------------------------------

// The open End forms and the Reconcile cards are kept per session view,
// so a re-render of the details puts the same nodes back (drafts, focus
// and delivery state survive live updates).
function endForms(s) {
  return s.endForms || (s.endForms = new Map());
}

function toggleEnd(s, exec) {
  const forms = endForms(s);
  if (forms.has(exec)) forms.delete(exec);
  else {
    forms.set(exec, new EndForm(exec, {
      heading: execName(s, exec),
      onSubmit: (payload) => {
        if (!live(s)) return;
        const cmd = newCommand(s, exec, "end", payload);
        if (!cmd) return;
        forms.delete(exec);
        sendCommand(s, cmd);
      },
      onClose: () => {
        forms.delete(exec);
        s.detailsKey = "";
        renderDetails(s);
      },
    }));
  }
  s.detailsKey = ""; // the key does not hold the forms: render now
  renderDetails(s);
  const f = forms.get(exec);
  if (f) f.el.querySelector("input:checked").focus(); // the owner asked for it
}

// endPanel is the execution's open End form, while it advertises End.
function endPanel(s, exec, v) {
  const f = endForms(s).get(exec);
  return f && v.controls.includes("end") ? f.el : null;
}

// commandName is how a sent command is listed (End says how it ends).
function commandName(c) {
  if (c.type === "end") return endLabel(c.payload);
  return (CONTROL_LABELS[c.type] || c.type).replace("…", "");
}

function reconcileCard(s, a) {
  const cards = s.reconciles || (s.reconciles = new Map());
  let card = cards.get(a.action_id);
  if (!card) {
    card = new ReconcileCard(a, {
      client: s.client,
      subject: s.claims.sub,
      canDecide: canAct(s),
      live: () => live(s),
      onSettled: (c) => {
        if (!live(s)) return;
        if (c.state === "failed" || c.state === "refused") {
          notice(s, "Your reconciliation of " + c.a.tool + ": " + c.statusEl.textContent);
        }
        scheduleRefresh(s, 0);
      },
    });
    cards.set(a.action_id, card);
  }
  return card;
}

// needsActionRead: an unknown outcome whose receipt (what to check) was
// not read yet, or a reconciled one whose record the card does not hold.
function needsActionRead(s, a) {
  const st = a.states || {};
  if (st.outcome === "unknown") return !s.receipts.has(a.action_id);
  const card = s.reconciles && s.reconciles.get(a.action_id);
  return !!st.reconciled && !(card && card.settled());
}

// ---- composer ---------------------------------------------------------------

function updateComposer(s) {
  if (!live(s)) return;
  const target = s.composerTarget;
  const v = target ? s.execViews.get(target) : null;
  const steerable = !!(v && v.controls.includes("steer"));
  $("composer-target").textContent = steerable
    ? "Steer → " + execName(s, target)
    : "Steer: choose an execution's Steer control to send it instructions.";
  const text = $("composer-text").value.trim();
  const busy = s.steer && s.steer.cmd.status === "sending";
  $("composer-send").disabled = !steerable || !text || !canAct(s) || busy;
  const st = s.steer ? s.steer.cmd : null;
  const out = $("composer-status");
  if (!st) {
    out.textContent = "";
    out.dataset.status = "";
    return;
  }
  out.dataset.status = st.status;
  out.textContent = "Steer " + COMMAND_TEXT[st.status] + (st.reason ? " (" + st.reason + ")" : "") +
    (st.status === "unknown" ? ": Send repeats the same command." : "");
  if ((st.status === "accepted" || st.status === "applied") && !s.steer.cleared) {
    s.steer.cleared = true;
    const box = $("composer-text");
    if (box.value.trim() === s.steer.text) {
      box.value = "";
      sessionStorage.removeItem(draftKey(s.session));
      $("composer-send").disabled = true;
    }
  }
}

function sendSteer(s) {
  const text = $("composer-text").value.trim();
  const target = s.composerTarget;
  if (!text || !target || !canAct(s)) return;
  let cmd;
  if (s.steer && s.steer.cmd.status === "unknown" && s.steer.text === text && s.steer.cmd.exec === target) {
    cmd = s.steer.cmd; // the same command again: applied at most once
  } else {
    cmd = newCommand(s, target, "steer", { instructions: text });
    if (!cmd) return;
    s.steer = { cmd, text, cleared: false };
  }
  sendCommand(s, cmd);
}

boot();
