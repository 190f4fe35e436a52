// The timeline picture of a family: valid time across, record-time revisions down.
//
// Each row is one revision of what memledger believed (newest on top); each bar is a
// valid-time window held at that revision. Bars of records no longer held are faded
// (closed: superseded or retracted) or hatched (revoked). Bars are focusable; hover or
// focus shows the details, Enter opens the record's history. A table under the picture
// says the same in text.

import { date, h, s, valueText, when } from "./dom.js";

const W = 960;
const LABEL = 232;
const RIGHT = 28;
const AXIS = 30;
const LANE = 26;
const GAP = 10;
const DAY = 86_400_000;

const ms = (iso) => (iso ? Date.parse(iso) : null);
let figures = 0;

/** The windows a family's history holds: authorised claims, not historical ones. */
export function windowsOf(history) {
  return history.filter((r) => r.authorised && r.kind !== "observation" && r.status !== "historical");
}

/**
 * The record-time revisions of a family, newest first: each with the instant it began,
 * the instant the next began (null for the newest), its revision number and the
 * windows held then.
 */
export function beliefs(history, changes) {
  const windows = windowsOf(history);
  const instants = new Set();
  for (const r of windows) {
    instants.add(ms(r.recorded_at));
    if (r.superseded_at) instants.add(ms(r.superseded_at));
  }
  for (const c of changes) {
    if (["recorded", "closed", "revoked", "review_accepted"].includes(c.action)) instants.add(ms(c.at));
  }
  const sorted = [...instants].filter((t) => t !== null).sort((a, b) => a - b);
  const rows = sorted.map((at, i) => {
    const held = windows
      .filter((r) => ms(r.recorded_at) <= at && (!r.superseded_at || ms(r.superseded_at) > at))
      .sort((a, b) => ms(a.valid_from) - ms(b.valid_from) || a.scope.localeCompare(b.scope));
    const revs = changes.filter((c) => ms(c.at) <= at).map((c) => c.revision);
    const revision = revs.length ? Math.max(...revs) : Math.max(0, ...held.map((r) => r.revision));
    return { at, until: sorted[i + 1] ?? null, revision, held };
  });
  return rows.reverse();
}

function domain(rows, validAt) {
  let lo = Infinity;
  let hi = -Infinity;
  let open = false;
  for (const row of rows) {
    for (const r of row.held) {
      lo = Math.min(lo, ms(r.valid_from));
      hi = Math.max(hi, ms(r.valid_from));
      if (r.valid_until) hi = Math.max(hi, ms(r.valid_until));
      else open = true;
    }
  }
  if (validAt !== null && Number.isFinite(lo)) {
    lo = Math.min(lo, validAt);
    hi = Math.max(hi, validAt);
  }
  if (!Number.isFinite(lo)) return null;
  const span = Math.max(hi - lo, DAY);
  return { lo: lo - span * 0.04, hi: hi + span * (open ? 0.14 : 0.05) };
}

const STEPS = [
  ["hour", 3_600_000],
  ["hour", 6 * 3_600_000],
  ["day", DAY],
  ["day", 2 * DAY],
  ["day", 7 * DAY],
  ["day", 14 * DAY],
  ["month", 30 * DAY],
  ["month", 91 * DAY],
  ["year", 365 * DAY],
  ["year", 5 * 365 * DAY],
];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function ticks(lo, hi) {
  const [unit, step] = STEPS.find(([, size]) => (hi - lo) / size <= 8) ?? STEPS[STEPS.length - 1];
  const found = [];
  const start = new Date(lo);
  let t;
  if (unit === "hour") {
    t = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate(), start.getUTCHours());
  } else if (unit === "day") {
    t = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate());
  } else if (unit === "month") {
    t = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), 1);
  } else {
    t = Date.UTC(start.getUTCFullYear(), 0, 1);
  }
  const months = Math.max(1, Math.round(step / (30 * DAY)));
  const years = Math.max(1, Math.round(step / (365 * DAY)));
  while (t <= hi && found.length < 40) {
    if (t >= lo) found.push(t);
    const d = new Date(t);
    if (unit === "month") t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1);
    else if (unit === "year") t = Date.UTC(d.getUTCFullYear() + years, 0, 1);
    else t += step;
  }
  const label = (v) => {
    const d = new Date(v);
    if (unit === "year") return String(d.getUTCFullYear());
    if (unit === "month") return `${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
    const day = `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`;
    return unit === "hour" ? `${day} ${String(d.getUTCHours()).padStart(2, "0")}:00` : day;
  };
  return found.map((v) => ({ at: v, label: label(v) }));
}

function statusWord(r) {
  if (r.status === "active") return "held now";
  if (r.status === "revoked") return "revoked";
  return `closed (${r.status})`;
}

/** What a window holds, readable at a glance: a value in words as it is, a turn as who
 * said what, any other value by its statement. */
export function windowLabel(r) {
  const v = r.value;
  if (typeof v === "string") return v;
  if (r.kind === "episode" && v && typeof v === "object" && typeof v.text === "string") {
    return v.speaker ? `${v.speaker}: ${v.text}` : v.text;
  }
  return r.claim || valueText(v);
}

/** What a bar says, in words: its tooltip, its aria-label and its table row. */
export function describeWindow(r) {
  const valid = `valid ${when(r.valid_from)} → ${when(r.valid_until, "open-ended")}`;
  const held = `held ${when(r.recorded_at)} → ${r.superseded_at ? when(r.superseded_at) : "now"}`;
  const scope = r.scope === "global" ? "" : ` · scope ${r.scope}`;
  return (
    `${windowLabel(r)}${scope} · ${valid} · ${held} · ${statusWord(r)} · ` +
    `event ${r.source_event_id} by ${r.source_actor_id}`
  );
}

function rowLabel(row, newest) {
  const since = when(new Date(row.at).toISOString());
  if (newest) return [`rev ${row.revision} · believed now`, `since ${since}`];
  return [`rev ${row.revision}`, `${since} → ${when(new Date(row.until).toISOString())}`];
}

/**
 * The figure of a family's timeline: the SVG, its legend and a table of the same.
 * ``rows`` from beliefs(); ``limit``: how many revisions to draw (newest first);
 * ``validAt``: the valid time marked by a line; ``selected``: a memory id to mark;
 * ``onOpen(record)``: Enter or click
 * on a bar; ``tooltip``: the shared tooltip element.
 */
export function timelineFigure(family, rows, { limit = Infinity, validAt = null, selected = null, onOpen, tooltip }) {
  const shown = rows.slice(0, limit);
  const scale = domain(shown, validAt);
  const uid = `tl${++figures}`;
  if (!scale) return null;
  const scopes = [...new Set(shown.flatMap((row) => row.held.map((r) => r.scope)))].sort();
  const rowHeight = Math.max(1, scopes.length) * LANE + GAP;
  const height = AXIS + shown.length * rowHeight + 8;
  const x = (t) => LABEL + ((t - scale.lo) / (scale.hi - scale.lo)) * (W - LABEL - RIGHT);
  const right = W - RIGHT;

  const svg = s("svg", {
    class: "timeline",
    viewBox: `0 0 ${W} ${height}`,
    width: W,
    height,
    role: "group",
    "aria-label": `Timeline of ${family}: valid time across, ${shown.length} record-time revision(s) down, newest on top. The table below says the same in text.`,
    "data-family": family,
  });
  svg.append(
    s(
      "defs",
      {},
      s(
        "pattern",
        { id: `${uid}-hatch`, width: 8, height: 8, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
        s("rect", { class: "hatch-bg", width: 8, height: 8 }),
        s("line", { class: "hatch-line", x1: 0, y1: 0, x2: 0, y2: 8 }),
      ),
      s(
        "marker",
        { id: `${uid}-open`, viewBox: "0 0 10 10", refX: 1, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" },
        s("path", { class: "open-arrow", d: "M0,0 L10,5 L0,10 z" }),
      ),
    ),
  );

  // the axis: ticks and grid lines
  const axis = s("g", { class: "axis", "aria-hidden": "true" });
  for (const tick of ticks(scale.lo, scale.hi)) {
    const at = x(tick.at);
    axis.append(
      s("line", { class: "grid", x1: at, x2: at, y1: AXIS - 6, y2: height - 4 }),
      s("text", { class: "tick", x: at, y: AXIS - 10, "text-anchor": "middle" }, tick.label),
    );
  }
  axis.append(s("text", { class: "axis-title", x: 8, y: AXIS - 10 }, "valid time (UTC) →"));
  svg.append(axis);

  shown.forEach((row, index) => {
    const top = AXIS + index * rowHeight;
    const group = s("g", {
      class: index === 0 ? "row row-now" : "row",
      "data-revision": row.revision,
      "data-row": index,
    });
    group.append(s("rect", { class: "row-bg", x: 0, y: top, width: W, height: rowHeight - 2 }));
    const [first, second] = rowLabel(row, index === 0);
    group.append(
      s("text", { class: "row-label", x: 8, y: top + 15 }, first),
      s("text", { class: "row-sub", x: 8, y: top + 29 }, second),
    );
    if (!row.held.length) {
      group.append(s("text", { class: "row-empty", x: LABEL + 8, y: top + 18 }, "nothing held"));
    }
    for (const r of row.held) {
      const lane = Math.max(0, scopes.indexOf(r.scope));
      const y = top + lane * LANE + 4;
      const x1 = Math.max(LABEL, x(ms(r.valid_from)));
      const x2 = r.valid_until ? x(ms(r.valid_until)) : right;
      const width = Math.max(3, x2 - x1);
      const tone = r.status === "active" ? "win-active" : r.status === "revoked" ? "win-revoked" : "win-closed";
      const words = describeWindow(r);
      const bar = s(
        "g",
        {
          class: `win ${tone}${r.memory_id === selected ? " win-selected" : ""}`,
          tabindex: 0,
          role: "link",
          "aria-label": `${words}. Open its history.`,
          "data-memory-id": r.memory_id,
          "data-status": r.status,
        },
        s("title", {}, words),
        s("rect", {
          class: "bar",
          x: x1,
          y,
          width,
          height: LANE - 8,
          rx: 3,
          fill: r.status === "revoked" ? `url(#${uid}-hatch)` : null,
        }),
      );
      if (!r.valid_until) {
        bar.append(
          s("line", { class: "open-line", x1: x1 + width - 1, x2: x1 + width + 6, y1: y + (LANE - 8) / 2, y2: y + (LANE - 8) / 2, "marker-end": `url(#${uid}-open)` }),
        );
      }
      const room = Math.floor((width - 10) / 7);
      if (room >= 3) {
        let text = windowLabel(r) + (scopes.length > 1 ? ` · ${r.scope}` : "");
        if (r.status === "revoked") text = `✕ ${text}`;
        if (text.length > room) text = `${text.slice(0, room - 1)}…`;
        bar.append(s("text", { class: "bar-text", x: x1 + 6, y: y + 13 }, text));
      }
      const show = () => tooltip?.show(bar, words);
      const hide = () => tooltip?.hide();
      bar.addEventListener("mouseenter", show);
      bar.addEventListener("focus", show);
      bar.addEventListener("mouseleave", hide);
      bar.addEventListener("blur", hide);
      bar.addEventListener("click", () => onOpen?.(r));
      bar.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          onOpen?.(r);
        }
      });
      group.append(bar);
    }
    svg.append(group);
  });

  if (validAt !== null && validAt >= scale.lo && validAt <= scale.hi) {
    const at = x(validAt);
    svg.append(
      s(
        "g",
        { class: "now", "aria-hidden": "true" },
        s("line", { class: "now-line", x1: at, x2: at, y1: AXIS - 4, y2: height - 4 }),
      ),
    );
  }

  const legend = h(
    "ul",
    { class: "legend", "aria-label": "Legend" },
    h("li", {}, h("span", { class: "swatch swatch-active" }), "held now"),
    h("li", {}, h("span", { class: "swatch swatch-closed" }), "closed since (superseded or retracted)"),
    h("li", {}, h("span", { class: "swatch swatch-revoked" }), "revoked"),
    h("li", {}, h("span", { class: "swatch swatch-open" }), "▸ open-ended"),
    validAt !== null ? h("li", {}, h("span", { class: "swatch swatch-now" }), `valid at ${when(new Date(validAt).toISOString())}`) : null,
  );

  const table = h(
    "table",
    { class: "data" },
    h("caption", {}, `What was believed at each revision of ${family}`),
    h(
      "thead",
      {},
      h("tr", {}, ["Revision", "Held in record time", "Value", "Scope", "Valid from", "Valid until", "Status"].map((t) => h("th", { scope: "col" }, t))),
    ),
    h(
      "tbody",
      {},
      shown.flatMap((row, index) => {
        const [first, second] = rowLabel(row, index === 0);
        if (!row.held.length) {
          return [h("tr", {}, h("td", {}, first), h("td", {}, second), h("td", { colspan: 5 }, "nothing held"))];
        }
        return row.held.map((r) =>
          h(
            "tr",
            {},
            h("td", {}, first),
            h("td", {}, second),
            h("td", {}, windowLabel(r)),
            h("td", {}, r.scope),
            h("td", {}, date(r.valid_from)),
            h("td", {}, date(r.valid_until, "open-ended")),
            h("td", {}, statusWord(r)),
          ),
        );
      }),
    ),
  );

  return h(
    "figure",
    { class: "timeline-figure" },
    h("div", { class: "timeline-scroll" }, svg),
    legend,
    h("details", { class: "timeline-table" }, h("summary", {}, "Timeline as a table"), h("div", { class: "table-scroll" }, table)),
  );
}
