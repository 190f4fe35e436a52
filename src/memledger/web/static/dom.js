// Building the page's DOM without HTML strings.
//
// Memory text is written by whoever can send an event, so it is data, never markup:
// every string given to h() or s() becomes a text node (or an attribute value set with
// setAttribute). Nothing here parses HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

function setProps(el, props) {
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.setAttribute("class", value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name === "text") el.textContent = String(value);
    else if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "value" && "value" in el) el.value = String(value);
    else if (name === "checked" && "checked" in el) el.checked = Boolean(value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, String(value));
  }
}

function addChildren(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: h("p", {class: "note"}, "text", h("b", {}, "bold")). */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  addChildren(el, children);
  return el;
}

/** An SVG element, the same way. */
export function s(tag, props, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setProps(el, props);
  addChildren(el, children);
  return el;
}

/** Replace the children of ``el``. */
export function fill(el, ...children) {
  el.replaceChildren();
  addChildren(el, children);
  return el;
}

/** An error shown where the action was: the problem's ``detail``. */
export function errorBox(error) {
  return h("p", { class: "error", role: "alert" }, String(error?.message ?? error));
}

/** A loading placeholder that screen readers announce. */
export function loading(what = "Loading") {
  return h("p", { class: "loading", role: "status" }, `${what}…`);
}

/** A clear empty state: a title and what to do about it. */
export function empty(title, ...explanation) {
  return h(
    "div",
    { class: "empty" },
    h("p", { class: "empty-title" }, title),
    explanation.length ? h("p", {}, ...explanation) : null,
  );
}

/**
 * A table in a sideways scroller: ``heads`` (the columns) and ``rows`` (each
 * ``{ attrs, cells }``, a cell a ``<td>`` or its content; a head a string or a node). On a
 * phone each row stands as a block, each cell under its column's head (``data-label``),
 * a ``td.wide`` on a line of its own.
 */
export function table(className, heads, rows) {
  const label = (head) => (typeof head === "string" ? head : head.textContent);
  const cell = (content, n) => {
    const td = content instanceof HTMLTableCellElement ? content : h("td", {}, content);
    td.dataset.label = label(heads[n]);
    return td;
  };
  return h(
    "div",
    { class: "table-scroll" },
    h(
      "table",
      { class: `data stack ${className}` },
      h("thead", {}, h("tr", {}, heads.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, rows.map(({ attrs, cells }) => h("tr", attrs ?? {}, cells.map(cell)))),
    ),
  );
}

/** A small badge; ``tone`` picks its colour (ok, warn, bad, muted, info). */
export function badge(text, tone = "muted", title) {
  return h("span", { class: `badge badge-${tone}`, title }, text);
}

// -- time ------------------------------------------------------------------------------
// Times are shown in UTC, which is how memledger stores them.

const pad = (n) => String(n).padStart(2, "0");

/** ``2026-10-19 09:00`` (UTC), or ``open`` for a missing end. */
export function when(iso, open = "open") {
  if (!iso) return open;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const date = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  return time === "00:00" ? date : `${date} ${time}`;
}

/**
 * An instant as a ``<time>`` that never breaks across lines: ``when(iso)`` shown, the
 * stored instant in its ``title`` and ``datetime``; ``open`` (as text) when missing.
 */
export function date(iso, open = "open") {
  if (!iso) return open;
  return h("time", { class: "date", datetime: iso, title: iso }, when(iso));
}

/** ``2026-10-19T09:00`` for a datetime-local input (UTC). */
export function toLocalInput(date) {
  return (
    `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}` +
    `T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}`
  );
}

/** The ISO instant (UTC) of a datetime-local input's value, or null when empty. */
export function fromLocalInput(value) {
  if (!value) return null;
  const d = new Date(`${value.length === 16 ? `${value}:00` : value}Z`);
  return Number.isNaN(d.getTime()) ? null : d.toISOString().replace(".000Z", "Z");
}

/** A value as text: strings as they are, anything else as compact JSON. */
export function valueText(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The private namespace of a subject (`agent:<id>`, see memledger.domain.keys), or null:
 * the tenant's shared memory. */
export function namespaceOf(subject) {
  const match = /^agent:([^/]+)/.exec(subject || "");
  return match ? `agent:${match[1]}` : null;
}

/** A badge saying whose memory a subject holds. */
export function whoseBadge(subject) {
  const ns = namespaceOf(subject);
  return ns
    ? badge(`private to ${ns}`, "warn", "Only this agent's keys (and keys that name it, and admin keys) read it.")
    : badge("shared", "muted", "The tenant's shared memory: every key of the tenant reads it.");
}
