// A small client of the lifecycle API: it lists the session's pending
// approvals and lets the human owner approve or decline them, and shows the
// Activity sections. It sends the same requests any client would; the
// X-Lifecycle-Origin header only records that the decision came from the UI.
"use strict";

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("lifecycle.token") || "";
let session = "";
let cursor = 0;

function claims(tok) {
  try {
    const part = tok.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part));
  } catch (e) {
    return null;
  }
}

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: Object.assign(
      { "Authorization": "Bearer " + token, "X-Lifecycle-Origin": "ui" },
      body ? { "Content-Type": "application/json" } : {}),
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    const err = new Error((data.error && data.error.message) || res.statusText);
    err.status = res.status;
    err.body = data;
    throw err;
  }
  return data;
}

function el(tag, props, ...children) {
  const n = document.createElement(tag);
  Object.assign(n, props || {});
  for (const c of children) n.append(c);
  return n;
}

function status(msg, isError) {
  $("status").textContent = msg || "";
  $("status").className = isError ? "error" : "muted";
}

async function decide(ap, decision, buttons) {
  buttons.forEach((b) => (b.disabled = true));
  status((decision === "approve" ? "Approving " : "Declining ") + ap.tool + "…");
  try {
    await api("POST", "/v1/approvals/" + encodeURIComponent(ap.approval_id), { decision, digest: ap.args_digest });
    status(decision === "approve" ? "Approved." : "Declined.");
  } catch (e) {
    if (e.status === 409 && e.body.error.current) {
      status("Already " + e.body.error.current.status + ".", true);
    } else {
      status(e.message, true);
      buttons.forEach((b) => (b.disabled = false));
    }
  }
  await refresh();
}

function renderApprovals(list) {
  const ul = $("approvals");
  ul.replaceChildren();
  $("pending-count").textContent = list.length ? String(list.length) : "";
  $("no-approvals").hidden = list.length > 0;
  for (const ap of list) {
    const approve = el("button", { className: "approve", type: "button", textContent: "Approve" });
    const decline = el("button", { className: "decline", type: "button", textContent: "Decline" });
    approve.onclick = () => decide(ap, "approve", [approve, decline]);
    decline.onclick = () => decide(ap, "decline", [approve, decline]);
    ul.append(el("li", { className: "card", id: "approval-" + ap.approval_id },
      el("h3", { textContent: ap.tool }),
      el("div", { className: "meta", textContent: "Reason: " + ap.reason.source + " / " + ap.reason.code +
        (ap.reason.detail ? " — " + ap.reason.detail : "") + " · policy " + ap.policy_version }),
      el("pre", { textContent: JSON.stringify(ap.arguments, null, 2) }),
      el("div", { className: "meta", textContent: "Execution " + ap.execution_id + " · expires " + new Date(ap.expires_at).toLocaleString() }),
      el("div", { className: "actions" }, approve, decline)));
  }
}

function renderActivity(act) {
  const box = $("activity");
  box.replaceChildren();
  const names = { needs_attention: "Needs attention", in_progress: "In progress", history: "History" };
  for (const key of ["needs_attention", "in_progress", "history"]) {
    const rows = act[key] || [];
    const sec = el("div", { className: "section" }, el("h3", { textContent: names[key] + " (" + rows.length + ")" }));
    for (const r of rows) {
      sec.append(el("div", { className: "row", textContent: r.heading + " · " + r.status + " · " +
        r.execution_count + (r.execution_count === 1 ? " execution" : " executions") }));
    }
    box.append(sec);
  }
}

async function refresh() {
  try {
    const [aps, act] = await Promise.all([
      api("GET", "/v1/sessions/" + encodeURIComponent(session) + "/approvals"),
      api("GET", "/v1/sessions/" + encodeURIComponent(session) + "/activity"),
    ]);
    renderApprovals(aps.approvals);
    renderActivity(act);
  } catch (e) {
    if (e.status === 401) return signOut("The token was refused: " + e.message);
    status(e.message, true);
  }
}

// follow long-polls the session's event log and refreshes on every batch.
async function follow() {
  for (;;) {
    if (!token) return;
    try {
      const batch = await api("GET", "/v1/sessions/" + encodeURIComponent(session) + "/events?wait=25&after=" + cursor);
      if (batch.events.length) {
        cursor = batch.next;
        await refresh();
      }
    } catch (e) {
      if (e.status === 401) return signOut("The token was refused: " + e.message);
      await new Promise((r) => setTimeout(r, 3000));
    }
  }
}

function signOut(msg) {
  token = "";
  sessionStorage.removeItem("lifecycle.token");
  start();
  if (msg) alert(msg);
}

async function start() {
  const c = token ? claims(token) : null;
  if (!c || !c.sid) {
    $("login").hidden = false;
    $("app").hidden = true;
    $("who").textContent = "";
    return;
  }
  session = c.sid;
  $("who").textContent = c.sub + " · " + c.role + " · session " + session;
  $("login").hidden = true;
  $("app").hidden = false;
  const head = await api("GET", "/v1/sessions/" + encodeURIComponent(session) + "/events?wait=0&limit=1000").catch(() => null);
  if (head) cursor = head.next;
  await refresh();
  follow();
}

$("login-form").onsubmit = (e) => {
  e.preventDefault();
  token = $("token-input").value.trim();
  sessionStorage.setItem("lifecycle.token", token);
  start();
};
$("logout").onclick = () => signOut();

// `lifecycle serve` can open /ui/#token=...; the fragment never reaches the server.
const m = location.hash.match(/token=([^&]+)/);
if (m) {
  token = decodeURIComponent(m[1]);
  sessionStorage.setItem("lifecycle.token", token);
  history.replaceState(null, "", location.pathname);
}
start();
