// The console view of one action's state machine execution (machine.html,
// reached from every action in Activity and from the action's
// links.console). It reads GET /v1/actions/{id}/machine and shows:
//   - the execution: status, start and stop, the current state while it
//     runs (a callback Task reads "waiting for a task token"), the error of
//     one that failed, and the AWS console and log links when the API gives
//     them;
//   - the state machine graph, drawn from the definition the API returned
//     (never from state names known here): Task, Choice, Wait, Pass,
//     Succeed and Fail states, and Next, Choice rule, Default, Catch and
//     Retry edges, each kind drawn differently; the path this execution
//     took is highlighted (states entered, edges taken, Retry loops run),
//     the current state is marked. Layout by dagre (vendor/dagre.min.js);
//     without it the page says so and keeps the path list;
//   - the path taken, in order, with how each state was reached;
//   - the event history, a table whose rows expand to the event's input and
//     output, paged ("Load more events").
// While the execution runs, the view is read again every 2 seconds.
//
// The token is the Activity page's (sessionStorage, this tab) or one given
// in the fragment (#action=ID&token=...), which is dropped from the
// address bar at once.

import { Client, HttpError } from "./api.js";
import { h } from "./dom.js";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const TOKEN_KEY = "lifecycle.token";
const POLL_MS = 2000;

const VIA_TEXT = { start: "start", next: "Next", choice: "Choice rule", default: "Default", catch: "Catch" };
const WAITING_TEXT = {
  task_token: "waiting for a task token",
  task: "running its task",
  retry: "waiting to retry",
  wait: "waiting (Wait state)",
};

let state = null; // {client, action, view, events, next, timer}

function fragment() {
  const out = {};
  for (const part of location.hash.replace(/^#/, "").split("&")) {
    const i = part.indexOf("=");
    if (i > 0) {
      try { out[part.slice(0, i)] = decodeURIComponent(part.slice(i + 1)); } catch (e) { /* ignore */ }
    }
  }
  return out;
}

function boot() {
  const f = fragment();
  if (f.token) {
    sessionStorage.setItem(TOKEN_KEY, f.token);
    history.replaceState(null, "", location.pathname + "#action=" + encodeURIComponent(f.action || ""));
  }
  const token = sessionStorage.getItem(TOKEN_KEY) || "";
  if (!f.action) return message("No action is named: open this view from an action in Activity.");
  if (!token) return message("Not signed in: open Activity with the link `lifecycle serve` prints, then this view from an action.");
  document.title = "State machine · " + f.action;
  state = { client: new Client(token), action: f.action, view: null, events: [], next: "", timer: 0 };
  $("more").addEventListener("click", () => loadMore());
  load();
}

function message(text) {
  $("message").textContent = text;
  $("message").hidden = !text;
}

async function load() {
  const s = state;
  clearTimeout(s.timer);
  try {
    const { data } = await s.client.request("GET", "/v1/actions/" + encodeURIComponent(s.action) + "/machine?page_size=200");
    if (s !== state) return;
    s.view = data;
    s.events = data.events;
    s.next = data.next_page_token || "";
    message("");
    render(s);
    setLive(data.status === "RUNNING" ? "live" : "ended");
    if (data.status === "RUNNING") s.timer = setTimeout(load, POLL_MS);
  } catch (e) {
    if (s !== state) return;
    if (e instanceof HttpError) {
      message(e.status === 401 ? "The server refused the token: sign in again through Activity." : e.message);
      if (e.status < 500) return;
    } else {
      message("No answer from the server; retrying…");
    }
    s.timer = setTimeout(load, POLL_MS * 2);
  }
}

async function loadMore() {
  const s = state;
  if (!s.next) return;
  $("more").disabled = true;
  try {
    const { data } = await s.client.request("GET", "/v1/actions/" + encodeURIComponent(s.action) + "/machine?page_size=200&page_token=" + encodeURIComponent(s.next));
    if (s !== state) return;
    s.events = s.events.concat(data.events);
    s.next = data.next_page_token || "";
    renderEvents(s);
  } catch (e) {
    message(e.message);
  } finally {
    $("more").disabled = false;
  }
}

function setLive(st) {
  const el = $("live");
  el.hidden = false;
  el.dataset.state = st;
  el.textContent = st === "live" ? "running · live" : "ended";
}

function render(s) {
  renderSummary(s.view);
  renderGraph(s.view);
  renderPath(s.view);
  renderEvents(s);
}

// ---- summary -----------------------------------------------------------------

function when(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? "" : d.toLocaleString();
}

function currentText(c) {
  return c.state + " (" + c.type + ")" + (c.waiting ? ": " + (WAITING_TEXT[c.waiting] || c.waiting) : "") + (c.error ? " after " + c.error : "");
}

function renderSummary(v) {
  const links = v.links || {};
  const rows = [
    ["Action", h("code", { text: v.action_id })],
    ["Status", h("span", { class: "exec-status", "data-status": v.status, text: v.status })],
    v.current ? ["Current state", h("span", { id: "current", class: "current-state", "data-state": v.current.state,
      "data-waiting": v.current.waiting || "", text: currentText(v.current) })] : null,
    v.error ? ["Error", h("span", { class: "error", text: v.error + (v.cause ? ": " + v.cause : "") })] : null,
    ["Started", when(v.start_date)],
    v.stop_date ? ["Stopped", when(v.stop_date)] : null,
    ["Execution", h("code", { text: v.execution_arn })],
    ["State machine", h("code", { text: v.state_machine_arn })],
    links.aws_console || (links.logs && links.logs.length) ? ["AWS", h("span", { class: "links" },
      links.aws_console ? h("a", { href: links.aws_console, rel: "noopener noreferrer", target: "_blank", class: "aws-console", text: "Step Functions console" }) : null,
      (links.logs || []).map((l) => h("a", { href: l.url, rel: "noopener noreferrer", target: "_blank", class: "log-link", text: "logs: " + l.function })))] : null,
  ].filter(Boolean);
  const box = $("summary");
  box.hidden = false;
  box.replaceChildren(h("dl", {}, rows.map(([k, val]) => [h("dt", { text: k }), h("dd", {}, val)])));
}

// ---- graph -------------------------------------------------------------------

// edgesOf lists every transition of the definition. Each has a stable id
// (kind:from:rule:to) that the path's steps name too.
function edgesOf(def) {
  const out = [];
  const add = (from, to, kind, rule, label) => out.push({ id: kind + ":" + from + ":" + rule + ":" + to, from, to, kind, rule, label });
  add("__start", def.StartAt, "next", 0, "");
  for (const [name, st] of Object.entries(def.States || {})) {
    if (st.Next) add(name, st.Next, "next", 0, "");
    if (st.End || st.Type === "Succeed" || st.Type === "Fail") add(name, "__end", "end", 0, "");
    (st.Choices || []).forEach((c, i) => add(name, c.Next, "choice", i, choiceLabel(c, i)));
    if (st.Default) add(name, st.Default, "default", 0, "Default");
    (st.Catch || []).forEach((c, i) => add(name, c.Next, "catch", i, "Catch " + (c.ErrorEquals || []).join(", ")));
  }
  return out;
}

function choiceLabel(c, i) {
  const op = Object.keys(c).find((k) => !["Variable", "Next", "Comment"].includes(k));
  if (c.Variable && op) {
    const val = c[op];
    return c.Variable.replace(/^\$\./, "") + " " + op.replace(/Equals$/, " ==").replace(/^String|^Numeric|^Boolean|^Timestamp/, "") + " " + (typeof val === "string" ? val : JSON.stringify(val));
  }
  return "rule " + (i + 1);
}

// takenEdges is the ids of the edges the path went through.
function takenEdges(v, def) {
  const taken = new Set();
  const path = v.path || [];
  if (path.length) taken.add("next:__start:0:" + path[0].state);
  for (const st of path.slice(1)) {
    const kind = st.via === "choice" || st.via === "catch" ? st.via : st.via === "default" ? "default" : "next";
    taken.add(kind + ":" + st.from + ":" + (st.rule || 0) + ":" + st.state);
  }
  const last = path[path.length - 1];
  if (last && v.status !== "RUNNING") {
    const st = def.States[last.state] || {};
    if (st.End || st.Type === "Succeed" || st.Type === "Fail") taken.add("end:" + last.state + ":0:__end");
  }
  return taken;
}

function svg(tag, attrs, ...children) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, val] of Object.entries(attrs || {})) {
    if (val === null || val === undefined || val === false) continue;
    if (k === "text") n.textContent = val;
    else n.setAttribute(k, String(val));
  }
  for (const c of children.flat()) if (c) n.append(c);
  return n;
}

function nodeSize(name, type) {
  if (type === "Start" || type === "End") return { width: 54, height: 54 };
  const w = Math.max(110, Math.ceil(name.length * 7.6) + 34);
  return type === "Choice" ? { width: w + 40, height: 56 } : { width: w, height: 46 };
}

function renderGraph(v) {
  const box = $("graph");
  const def = v.definition || {};
  if (!window.dagre) {
    box.replaceChildren(h("p", { class: "muted", id: "no-layout",
      text: "The graph needs its layout library, which is not installed on this server (make ui-assets). The path taken and the history are below." }));
    return;
  }
  const visits = new Map(); // state -> steps
  for (const st of v.path || []) visits.set(st.state, (visits.get(st.state) || []).concat([st]));
  const taken = takenEdges(v, def);
  const edges = edgesOf(def);

  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 46, edgesep: 14, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  g.setNode("__start", Object.assign({ name: "Start", type: "Start" }, nodeSize("Start", "Start")));
  g.setNode("__end", Object.assign({ name: "End", type: "End" }, nodeSize("End", "End")));
  for (const [name, st] of Object.entries(def.States || {})) {
    g.setNode(name, Object.assign({ name, type: st.Type || "?" }, nodeSize(name, st.Type)));
  }
  for (const e of edges) {
    if (!g.hasNode(e.to)) g.setNode(e.to, Object.assign({ name: e.to, type: "Missing" }, nodeSize(e.to, "Missing")));
    const label = e.label ? { width: Math.min(220, e.label.length * 6.4 + 8), height: 16, labelpos: "c" } : {};
    g.setEdge(e.from, e.to, Object.assign({ edge: e }, label), e.id);
  }
  dagre.layout(g);

  const gr = g.graph();
  const defs = svg("defs", {}, ["plain", "taken", "catch", "choice"].map((k) =>
    svg("marker", { id: "arrow-" + k, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-head " + k }))));
  const edgeEls = [], labelEls = [], nodeEls = [];
  for (const ref of g.edges()) {
    const d = g.edge(ref);
    const e = d.edge;
    const on = taken.has(e.id);
    const pts = d.points || [];
    const path = pts.map((p, i) => (i ? "L" : "M") + p.x.toFixed(1) + "," + p.y.toFixed(1)).join(" ");
    const head = on ? (e.kind === "catch" ? "catch" : "taken") : e.kind === "catch" ? "catch" : e.kind === "choice" || e.kind === "default" ? "choice" : "plain";
    edgeEls.push(svg("path", { class: "edge", d: path, "data-kind": e.kind, "data-from": e.from, "data-to": e.to, "data-rule": e.rule,
      "data-taken": on ? "true" : "false", "marker-end": "url(#arrow-" + head + ")" }, svg("title", { text: e.kind + ": " + e.from + " → " + e.to + (e.label ? " (" + e.label + ")" : "") })));
    if (e.label && d.x !== undefined) {
      labelEls.push(svg("text", { class: "edge-label", x: d.x, y: d.y, "data-kind": e.kind, "data-taken": on ? "true" : "false", text: e.label }));
    }
  }
  for (const id of g.nodes()) {
    const n = g.node(id);
    const steps = visits.get(id) || [];
    const st = (def.States || {})[id] || {};
    const isCurrent = v.current && v.current.state === id;
    const failed = steps.some((x) => x.failed_with);
    const visited = steps.length > 0 || (id === "__start" && (v.path || []).length > 0) ||
      (id === "__end" && [...taken].some((t) => t.endsWith(":__end")));
    const x = n.x - n.width / 2, y = n.y - n.height / 2;
    let shape;
    if (n.type === "Start" || n.type === "End") shape = svg("circle", { cx: n.x, cy: n.y, r: n.width / 2 });
    else if (n.type === "Choice") shape = svg("polygon", { points: [[n.x, y], [x + n.width, n.y], [n.x, y + n.height], [x, n.y]].map((p) => p.join(",")).join(" ") });
    else shape = svg("rect", { x, y, width: n.width, height: n.height, rx: n.type === "Succeed" || n.type === "Fail" || n.type === "Pass" ? 18 : 5 });
    const children = [shape];
    const waiting = isCurrent && v.current.waiting_for_task_token;
    children.push(svg("text", { x: n.x, y: n.y - (n.type === "Start" || n.type === "End" ? 0 : 7), text: n.name }));
    if (n.type !== "Start" && n.type !== "End") {
      const kind = n.type + (st.Resource && /waitForTaskToken$/.test(st.Resource) ? " · callback" : "") + (steps.length > 1 ? " · entered " + steps.length + "×" : "");
      children.push(svg("text", { class: "kind", x: n.x, y: n.y + 10, text: kind }));
    }
    if (waiting) children.push(svg("text", { class: "waiting", x: n.x, y: y + n.height + 11, text: "waiting for a task token" }));
    else if (isCurrent) children.push(svg("text", { class: "waiting", x: n.x, y: y + n.height + 11, text: WAITING_TEXT[v.current.waiting] || "current" }));
    // Retry: a loop on the state's right side, one per state that has Retry
    // entries; drawn taken when this execution retried there.
    const retries = steps.reduce((k, x) => k + (x.retries || []).length, 0);
    if ((st.Retry || []).length) {
      const rx = x + n.width, ry = n.y;
      children.push(svg("path", { class: "edge", "data-kind": "retry", "data-from": id, "data-to": id, "data-taken": retries ? "true" : "false",
        d: `M${rx},${ry - 10} C${rx + 26},${ry - 22} ${rx + 26},${ry + 22} ${rx},${ry + 10}`, "marker-end": "url(#arrow-plain)" },
        svg("title", { text: "Retry: " + st.Retry.map((r) => (r.ErrorEquals || []).join(", ") + " ×" + (r.MaxAttempts === undefined ? 3 : r.MaxAttempts)).join("; ") })));
      if (retries) children.push(svg("text", { class: "edge-label", "data-kind": "retry", "data-taken": "true", x: rx + 30, y: ry, text: "↻" + retries }));
    }
    nodeEls.push(svg("g", { class: "node", "data-state": id, "data-type": n.type, "data-visited": visited ? "true" : "false",
      "data-current": isCurrent ? "true" : "false", "data-waiting": isCurrent ? v.current.waiting || "" : "", "data-failed": failed ? "true" : "false",
      "data-retries": retries }, children, svg("title", { text: id + " (" + n.type + ")" + (steps.length ? ", entered " + steps.length + "×" : ", not entered") })));
  }
  const width = Math.ceil(gr.width + 60), height = Math.ceil(gr.height + 10);
  box.replaceChildren(svg("svg", { id: "graph-svg", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": "State machine graph with the path this execution took" }, defs, edgeEls, labelEls, nodeEls));
}

// ---- path --------------------------------------------------------------------

function renderPath(v) {
  $("path").replaceChildren(...(v.path || []).map((st) => h("li", { "data-state": st.state, "data-via": st.via },
    h("strong", { text: st.state }), " ",
    h("span", { class: "muted", text: "(" + st.type + ")" }), " ",
    h("span", { class: "via", "data-via": st.via, text: st.via === "start" ? "start"
      : "from " + st.from + " via " + VIA_TEXT[st.via] + (st.rule !== undefined && st.via !== "default" ? " " + (st.rule + 1) : "") + (st.error ? " (" + st.error + ")" : "") }),
    st.retries && st.retries.length ? h("span", { class: "retries", text: " · retried " + st.retries.length + "× (" + st.retries.map((r) => r.error).join(", ") + ")" }) : null,
    st.failed_with ? h("span", { class: "failed", text: " · failed: " + st.failed_with }) : null,
    v.current && v.current.state === st.state && !st.exited_at ? h("span", { class: "current-state", text: " " + (WAITING_TEXT[v.current.waiting] || "current") }) : null)));
}

// ---- events ------------------------------------------------------------------

function pretty(s) {
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s; }
}

function renderEvents(s) {
  const start = s.view.start_date ? new Date(s.view.start_date).getTime() : 0;
  $("event-count").textContent = String(s.view.event_count);
  $("events").tBodies[0].replaceChildren(...s.events.map((ev) => {
    const data = [
      ev.input !== undefined ? ["Input", ev.input, ev.input_truncated] : null,
      ev.output !== undefined ? ["Output", ev.output, ev.output_truncated] : null,
      ev.error || ev.cause ? ["Error", (ev.error || "") + (ev.cause ? "\n" + ev.cause : ""), false] : null,
      ev.resource ? ["Resource", (ev.resource_type ? ev.resource_type + ": " : "") + ev.resource, false] : null,
    ].filter(Boolean);
    const elapsed = start ? "+" + ((new Date(ev.timestamp).getTime() - start) / 1000).toFixed(3) + " s" : "";
    return h("tr", { "data-event-id": ev.id, "data-type": ev.type, "data-failure": /Failed$|TimedOut$|Aborted$/.test(ev.type) ? "true" : "false" },
      h("td", { text: String(ev.id) }),
      h("td", { text: ev.type }),
      h("td", { text: ev.state || "" }),
      h("td", { title: ev.timestamp, text: elapsed }),
      h("td", {}, data.length ? h("details", { class: "event-data" },
        h("summary", { text: data.map((d) => d[0]).join(" · ") }),
        data.map(([label, text, truncated]) => [h("div", { class: "data-label", text: label + (truncated ? " (truncated: too large to keep)" : "") }),
          h("pre", { "data-label": label.toLowerCase(), text: label === "Input" || label === "Output" ? pretty(text) : text })])) : null));
  }));
  $("more").hidden = !s.next;
}

boot();
