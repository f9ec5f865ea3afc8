// The End form: how the owner ends an execution it advertises "end" for
// (running or paused). It is sent as the End command, through the same
// path as every control (a fresh command_id, the execution's version;
// shown "accepted", then "applied"): completed, or failed with a reason
// code and a message.
//
// One form per execution, kept by the page while it is open: the details
// are re-rendered on every live update, and the same node is put back, so
// what the owner chose and typed survives them.

import { h } from "./dom.js";

// Reason codes offered for a failure; any code of the same shape may be
// typed (the server checks it again).
export const END_REASONS = ["aborted", "model_error", "user_stopped"];
const REASON = /^[a-z][a-z0-9_]{0,63}$/;
const MAX_MESSAGE = 4096;

export class EndForm {
  // ctx: {heading (how the execution is named), onSubmit(payload), onClose()}
  constructor(exec, ctx) {
    this.exec = exec;
    this.ctx = ctx;
    this.build();
  }

  name() {
    return this.ctx.heading || "this execution";
  }

  build() {
    const id = (name) => "end-" + name + "-" + this.exec;
    const radio = (value, label) => h("label", { class: "choice" },
      h("input", { type: "radio", name: id("status"), value, checked: value === "completed", "data-focus-key": "end:" + this.exec + ":" + value,
        onchange: () => this.sync() }), " " + label);
    this.reasonEl = h("input", { id: id("reason"), type: "text", list: id("reasons"), autocomplete: "off", spellcheck: "false",
      placeholder: "aborted", "data-focus-key": "end:" + this.exec + ":reason" });
    this.messageEl = h("textarea", { id: id("message"), rows: 2, maxlength: MAX_MESSAGE, "data-focus-key": "end:" + this.exec + ":message",
      placeholder: "What people should know about how it ended" });
    this.errorEl = h("p", { class: "error form-error", role: "alert", hidden: true });
    this.reasonRow = h("div", { class: "field" },
      h("label", { for: id("reason"), text: "Reason code" }), this.reasonEl,
      h("datalist", { id: id("reasons") }, END_REASONS.map((r) => h("option", { value: r }))));
    this.el = h("form", { class: "end-form", "data-execution-id": this.exec, "aria-label": "End " + this.name(),
      novalidate: true, onsubmit: (e) => this.submit(e), oninput: () => { this.errorEl.hidden = true; } },
      h("fieldset", { class: "choices" },
        h("legend", { text: "End " + this.name() + " as" }),
        radio("completed", "Completed"), radio("failed", "Failed")),
      this.reasonRow,
      h("div", { class: "field" }, h("label", { for: id("message"), text: "Message (optional)" }), this.messageEl),
      this.errorEl,
      h("div", { class: "form-actions" },
        h("button", { type: "submit", class: "end-submit", "data-focus-key": "end:" + this.exec + ":submit", text: "End execution" }),
        h("button", { type: "button", class: "link end-close", "data-focus-key": "end:" + this.exec + ":close", text: "Close",
          onclick: () => this.ctx.onClose() })));
    this.sync();
  }

  status() {
    const c = this.el.querySelector("input[type=radio]:checked");
    return c ? c.value : "completed";
  }

  sync() {
    this.reasonRow.hidden = this.status() !== "failed";
    this.errorEl.hidden = true;
  }

  // payload is the End command's payload, or null with the reason shown
  // when the form is not complete.
  payload() {
    const status = this.status();
    const message = this.messageEl.value.trim();
    const p = { status };
    if (status === "failed") {
      const reason = this.reasonEl.value.trim();
      if (!REASON.test(reason)) {
        this.errorEl.textContent = reason === ""
          ? "A failure needs a reason code, such as aborted or model_error."
          : "The reason code is lower-case letters, digits and underscores (such as model_error).";
        this.errorEl.hidden = false;
        return null;
      }
      p.reason = reason;
    }
    if (message) p.message = message;
    return p;
  }

  submit(e) {
    e.preventDefault();
    const p = this.payload();
    if (p) this.ctx.onSubmit(p);
  }
}

// endLabel names an End command with how it ends the execution.
export function endLabel(payload) {
  if (!payload) return "End";
  return "End (" + payload.status + (payload.reason ? ": " + payload.reason : "") + ")";
}
