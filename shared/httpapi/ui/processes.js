// Managed processes (issue 14): the background processes an execution
// started (Bash with run_in_background), listed in its details with their
// command, status (running; exited with its code; stopped; lost) and start
// time; an Output panel that reads the process's output page by page
// (GET /v1/processes/{id}/output?after=, following while it runs); Stop for
// a running one; and the "Background process lost" card (Needs attention)
// with Acknowledge.
//
// Stop and Acknowledge are POST /v1/processes/{id}/stop with a fresh
// command_id, shown like every control: "Sending…", "accepted: saved, not
// applied yet" (202: the supervisor stops it at its next poll), "applied"
// (the process has ended), "rejected" (it was lost: nothing can stop it;
// the request acknowledges it), "refused" (the server said no) or
// "delivery unknown" (no answer: Retry sends the same command_id again).
//
// Output panels and stop receipts are kept here per process, so a
// re-render of the details puts the same nodes back (the text read so far
// and the scroll position survive live updates).

import { HttpError, newID } from "./api.js";
import { h, time } from "./dom.js";

const enc = encodeURIComponent;
const FOLLOW_MS = 1000;
const STOP_TEXT = {
  sending: "Sending…",
  accepted: "accepted: saved, not applied yet",
  applied: "applied",
  rejected: "rejected: it was lost; nothing can stop it from here (acknowledged)",
  failed: "refused",
  unknown: "delivery unknown",
};

// processStatus says a process's status in words.
export function processStatus(p) {
  switch (p.status) {
    case "exited":
      return "exited " + (p.exit_code ?? "?");
    case "stopped":
      if (p.exit_code === -1) return "stopped (killed by a signal)";
      return "stopped" + (p.exit_code !== undefined && p.exit_code !== null ? " (code " + p.exit_code + ")" : "");
    default:
      return p.status;
  }
}

export class Processes {
  // ctx: {client, canAct, live(), signal, onChange(), onSettled(text)}
  constructor(ctx) {
    this.ctx = ctx;
    this.stops = new Map(); // process_id → {id, status, reason, ack}
    this.outputs = new Map(); // process_id → output panel
  }

  // key is what the details' rendering depends on here.
  key() {
    return [...this.stops.entries()].map(([id, c]) => [id, c.status, c.reason]).concat([...this.outputs.keys()]);
  }

  // list renders an execution's processes (null: none).
  list(e) {
    const ps = e.processes || [];
    if (!ps.length) return null;
    return h("ul", { class: "processes", "aria-label": "Background processes" }, ps.map((p) => this.row(p)));
  }

  row(p) {
    const out = this.outputs.get(p.process_id);
    const stop = this.stops.get(p.process_id);
    if (stop && stop.status === "accepted" && p.status !== "running") stop.status = "applied";
    if (out) out.running = p.status === "running";
    return h("li", { class: "process", "data-process-id": p.process_id, "data-status": p.status },
      h("div", { class: "process-head" },
        h("code", { class: "process-command", text: p.command }),
        h("span", { class: "badge process-status", "data-value": p.status, text: processStatus(p) }),
        h("span", { class: "muted started", text: "started " + time(p.started_at) }),
        h("code", { class: "muted process-id", text: p.process_id }),
        h("button", { type: "button", class: "link output-toggle", "data-focus-key": "out:" + p.process_id,
          "aria-expanded": out ? "true" : "false", text: out ? "Hide output" : "Output", onclick: () => this.toggle(p) }),
        p.status === "running" && (!stop || stop.status === "unknown" || stop.status === "failed")
          ? h("button", { type: "button", class: "process-stop", "data-focus-key": "stop:" + p.process_id, disabled: !this.ctx.canAct,
            title: this.ctx.canAct ? null : "Only the session's human owner can stop it",
            text: stop && stop.status === "unknown" ? "Retry the same Stop" : "Stop", onclick: () => this.stop(p.process_id, false) })
          : null,
        stop && !stop.ack ? this.receipt("Stop", stop) : null),
      out ? out.el : null);
  }

  receipt(name, c) {
    return h("span", { class: "stop-status" + (c.status === "failed" ? " error" : ""), "data-status": c.status,
      text: name + ": " + STOP_TEXT[c.status] + (c.reason ? " (" + c.reason + ")" : "") });
  }

  // lostCard is the Needs-attention card of a lost process: what was
  // lost, that it may still run, and Acknowledge.
  lostCard(at) {
    const c = this.stops.get(at.process_id);
    return h("div", { class: "attention-card", role: "group", "data-kind": at.kind, "data-process-id": at.process_id,
      "aria-label": at.label },
      h("strong", { text: at.label }),
      h("p", { text: at.detail || "" }),
      h("p", { class: "muted", text: "Its supervisor is gone: it is never signalled from a saved PID. Check the host; Acknowledge takes it out of Needs attention." }),
      !c || c.status === "unknown" || c.status === "failed"
        ? h("button", { type: "button", class: "acknowledge", "data-focus-key": "ack:" + at.process_id, disabled: !this.ctx.canAct,
          text: c && c.status === "unknown" ? "Retry the same Acknowledge" : "Acknowledge", onclick: () => this.stop(at.process_id, true) })
        : null,
      c ? this.receipt("Acknowledge", c) : null);
  }

  // stop sends (or, after an unknown delivery, re-sends with the same
  // command_id) the stop request of a process.
  async stop(id, ack) {
    if (!this.ctx.canAct || !this.ctx.live()) return;
    let c = this.stops.get(id);
    if (!c || c.status === "failed") c = { id: newID("cmd"), status: "sending", reason: "", ack };
    c.status = "sending";
    c.reason = "";
    this.stops.set(id, c);
    this.ctx.onChange();
    try {
      const { data } = await this.ctx.client.request("POST", "/v1/processes/" + enc(id) + "/stop", { command_id: c.id }, { signal: this.ctx.signal });
      if (!this.ctx.live()) return;
      c.status = data.status in STOP_TEXT ? data.status : "accepted";
      c.reason = "";
    } catch (e) {
      if (!this.ctx.live() || (e && e.name === "AbortError")) return;
      if (e instanceof HttpError && e.status < 500) {
        c.status = "failed";
        c.reason = e.message;
        this.ctx.onSettled((ack ? "Acknowledge" : "Stop") + " was refused: " + e.message + ".");
      } else {
        c.status = "unknown";
      }
    }
    this.ctx.onChange();
  }

  toggle(p) {
    const out = this.outputs.get(p.process_id);
    if (out) {
      clearTimeout(out.timer);
      out.closed = true;
      this.outputs.delete(p.process_id);
    } else {
      this.open(p);
    }
    this.ctx.onChange();
  }

  // open makes the output panel of a process (stdout; stderr below it
  // once it has bytes) and starts reading it.
  open(p) {
    const stream = (name) => ({ name, next: 0, pre: h("pre", { class: "output-text", "data-stream": name, tabindex: "0",
      "aria-label": name + " of " + p.command }) });
    const streams = [stream("stdout"), stream("stderr")];
    const errLabel = h("p", { class: "muted stream-label", hidden: true, text: "stderr" });
    streams[1].pre.hidden = true;
    streams[1].shown = () => { streams[1].pre.hidden = errLabel.hidden = false; };
    const state = h("p", { class: "muted output-state", role: "status", text: "Reading…" });
    const out = { id: p.process_id, streams, timer: 0, closed: false, running: p.status === "running", state,
      el: h("div", { class: "output", "data-process-id": p.process_id }, streams[0].pre, errLabel, streams[1].pre, state) };
    this.outputs.set(p.process_id, out);
    this.read(out);
  }

  // read reads the pages after the cursor; while the process runs (and
  // the panel is open) it comes back every second for more.
  async read(out) {
    if (out.closed || !this.ctx.live()) return;
    let ended = true;
    try {
      for (const st of out.streams) {
        if (!(await this.readStream(out, st))) ended = false;
        if (out.closed || !this.ctx.live()) return;
      }
      out.state.textContent = ended ? "End of output." : out.running ? "Following…" : "No more output yet.";
      out.el.dataset.ended = ended ? "true" : "false";
    } catch (e) {
      if (out.closed || !this.ctx.live() || (e && e.name === "AbortError")) return;
      ended = false;
      out.state.textContent = "Could not read the output" + (e && e.message ? ": " + e.message : "") + "; retrying.";
    }
    if (!ended) out.timer = setTimeout(() => this.read(out), FOLLOW_MS);
  }

  // readStream appends the pages of one stream after its cursor; true
  // when the process ended and the stream has nothing more.
  async readStream(out, st) {
    for (;;) {
      const { data } = await this.ctx.client.request("GET", "/v1/processes/" + enc(out.id) + "/output?stream=" + st.name + "&after=" + st.next,
        undefined, { signal: this.ctx.signal });
      if (out.closed || !this.ctx.live()) return false;
      if (data.truncated && data.from > st.next) st.pre.append(h("span", { class: "muted gap", text: "[" + (data.from - st.next) + " bytes dropped]\n" }));
      if (data.data) {
        if (st.shown) st.shown();
        const atEnd = st.pre.scrollTop + st.pre.clientHeight >= st.pre.scrollHeight - 4;
        st.pre.append(data.data);
        if (atEnd) st.pre.scrollTop = st.pre.scrollHeight;
      }
      st.next = data.next;
      if (data.ended || !data.data) return !!data.ended;
    }
  }
}
