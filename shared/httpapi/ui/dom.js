// Small DOM helpers. Text always goes in as text (textContent), never as
// HTML: tool arguments and reasons come from agents.

// h(tag, attrs, ...children): attrs keys "class" and "text" set className
// and textContent, "onX" functions become listeners, booleans toggle an
// attribute, everything else is an attribute. Children may be strings,
// nodes, arrays, null or false.
export function h(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") n.className = v;
    else if (k === "text") n.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? "" : String(v));
  }
  append(n, children);
  return n;
}

function append(n, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(n, c);
    else n.append(c);
  }
}

// short shows the end of a long identifier, as the Activity headings do.
export function short(id) {
  id = String(id || "");
  return id.length <= 8 ? id : "…" + id.slice(-6);
}

// execNamed is how a card or notice names an execution: the heading the
// page knows for it (name(id): the server's, quoted), else words; never an
// id or the end of one (the full id goes in the element's tooltip).
export function execNamed(name, id) {
  return (name && name(id)) || "in this session";
}

export function time(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? "" : d.toLocaleTimeString();
}

export function plural(n, one, many) {
  return n + " " + (n === 1 ? one : many);
}

// when is a time, with its date when that is not today.
export function when(t) {
  if (!t) return "";
  const d = new Date(t);
  if (isNaN(d)) return "";
  return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
}
