// A subject's memories: current values by family and kind with their provenance, each
// family's timeline, and the history of a family on both time axes.

import { openCorrect, openRevoke } from "./actions.js";
import { subjectPath } from "./api.js";
import { badge, date, empty, fromLocalInput, h, table, toLocalInput, valueText, whoseBadge } from "./dom.js";
import { call, link, mayAdmin, mayWrite, state, statusBadge, toggleEvent, tooltip, yesNo } from "./shared.js";
import { beliefs, timelineFigure, windowsOf } from "./timeline.js";

const TIMELINE_ROWS = 4;

// -- the subject view -------------------------------------------------------------------

async function loadFamilies(subject) {
  const slots = await call(subjectPath(subject, "families"));
  const details = await Promise.all(
    slots.map((slot) =>
      Promise.all([
        call(subjectPath(subject, "families", slot.family, "history"), {
          query: { include_revoked: mayAdmin() ? "true" : undefined },
        }),
        call(subjectPath(subject, "families", slot.family, "changes")),
      ]),
    ),
  );
  return slots.map((slot, i) => ({ slot, history: details[i][0], changes: details[i][1] }));
}

export async function renderSubject({ subject, validAt }) {
  const at = validAt ? new Date(fromLocalInput(validAt) ?? Date.now()) : new Date();
  const atIso = at.toISOString();
  const [families, current] = await Promise.all([
    loadFamilies(subject),
    call(subjectPath(subject, "records"), { query: { valid_at: atIso } }),
  ]);
  const header = [
    h("h1", { tabindex: -1 }, subject),
    h("p", { class: "whose" }, "Whose: ", whoseBadge(subject)),
    h(
      "div",
      { class: "toolbar" },
      validAtForm(subject, validAt, at),
      mayWrite() ? h("button", { type: "button", onclick: () => openCorrect({ subject }) }, "Add a memory…") : null,
      h("a", { href: link(["traces"], { subject }), class: "button quiet" }, "Context traces"),
    ),
  ];
  if (!families.length) {
    return [
      ...header,
      empty(
        `No memories for ${subject} yet.`,
        "Memories appear here once an event about this subject is ingested and its claims are committed.",
        mayWrite() ? " You can also state one yourself with “Add a memory…”." : "",
      ),
    ];
  }
  const held = current.length;
  const currentIds = new Set(current.map((r) => r.memory_id));
  const later = families.reduce((n, f) => n + upcomingOf(f.history, currentIds, at).length, 0);
  return [
    ...header,
    h(
      "p",
      { class: "summary" },
      `${held} current ${held === 1 ? "memory" : "memories"} valid at `,
      date(atIso),
      " UTC",
      later ? ` and ${later} upcoming ${later === 1 ? "window" : "windows"}` : "",
      `, in ${families.length} ${families.length === 1 ? "family" : "families"}. `,
      "Current means authorised and meant to be true at that time; observations are kept but never used as values.",
    ),
    families.map((f) => familySection(subject, f, current.filter((r) => r.family === f.slot.family), at)),
  ];
}

function validAtForm(subject, chosen, at) {
  const input = h("input", { type: "datetime-local", id: "valid-at", value: toLocalInput(at), "aria-describedby": "valid-at-help" });
  return h(
    "form",
    {
      class: "valid-at",
      novalidate: true,
      onsubmit: (event) => {
        event.preventDefault();
        location.hash = link(["s", subject], { valid_at: input.value });
      },
    },
    h("label", { for: "valid-at" }, "Valid at (UTC)"),
    input,
    h("button", { type: "submit" }, "Show"),
    chosen ? h("a", { href: link(["s", subject]), class: "button quiet" }, "Now") : null,
    h("span", { id: "valid-at-help", class: "visually-hidden" }, "Which valid time the current memories are shown for."),
  );
}

/** Windows held now that begin after ``at``: what will be true later. */
function upcomingOf(history, currentIds, at) {
  return windowsOf(history).filter(
    (r) => r.status === "active" && !currentIds.has(r.memory_id) && Date.parse(r.valid_from) > at.getTime(),
  );
}

const OPEN_ATTRIBUTES = "attribute";

/**
 * The attribute an open attribute's scope names: "diet" → "diet", "allergy:peanuts" →
 * "allergy", "person:sister/diet" → "sister · diet" (someone else's, under their relation).
 */
export function attributeOf(scope) {
  if (scope.startsWith("person:")) {
    const [who, attribute = ""] = scope.slice("person:".length).split("/");
    return `${who} · ${attribute.split(":")[0] || "about them"}`;
  }
  return scope.split(":")[0];
}

/** The speaker's own attributes by name, then other people's, then observations. */
function byAttribute([a], [b]) {
  const rank = (g) => (g === "observation" ? 2 : g.includes(" · ") ? 1 : 0);
  return rank(a) - rank(b) || a.localeCompare(b);
}

function familySection(subject, { slot, history, changes }, current, at) {
  const family = slot.family;
  const schema = state.families.get(family);
  const upcoming = upcomingOf(history, new Set(current.map((r) => r.memory_id)), at);
  const observations = history.filter((r) => r.status === "active" && !r.authorised);
  const shown = [...current, ...upcoming, ...observations];
  // open attributes read by attribute (diet, allergy, a sister's diet), the rest by kind
  const groupOf = family === OPEN_ATTRIBUTES ? (r) => (r.authorised ? attributeOf(r.scope) : "observation") : (r) => r.kind;
  const byKind = new Map();
  for (const r of shown) {
    const group = groupOf(r);
    if (!byKind.has(group)) byKind.set(group, []);
    byKind.get(group).push(r);
  }
  const id = `family-${family}`;
  const rows = beliefs(history, changes);
  const figure = rows.length
    ? timelineFigure(family, rows, {
        limit: TIMELINE_ROWS,
        validAt: at.getTime(),
        tooltip,
        onOpen: (r) => {
          location.hash = link(["s", subject, "h", family, r.memory_id]);
        },
      })
    : null;
  const upcomingIds = new Set(upcoming.map((r) => r.memory_id));
  return h(
    "section",
    { class: "family", "aria-labelledby": id, "data-family": family },
    h(
      "div",
      { class: "family-head" },
      h("h2", { id }, family),
      h("span", { class: "meta" }, `revision ${slot.revision} · generation ${slot.generation}`, slot.updated_at ? [" · changed ", date(slot.updated_at)] : ""),
      h(
        "div",
        { class: "actions" },
        h("a", { href: link(["s", subject, "h", family]), class: "button quiet" }, "History"),
        mayWrite() ? h("button", { type: "button", onclick: () => openCorrect({ subject, family }) }, "Correct…") : null,
      ),
    ),
    schema?.description ? h("p", { class: "family-desc" }, schema.description) : null,
    shown.length
      ? (family === OPEN_ATTRIBUTES ? [...byKind].sort(byAttribute) : [...byKind]).map(([kind, records]) =>
          h(
            "div",
            family === OPEN_ATTRIBUTES && kind !== "observation"
              ? { class: "kind attribute", "data-attribute": kind }
              : { class: "kind", "data-kind": kind },
            h("h3", {}, kind === "observation" ? "observation — retained, not authorised" : kind),
            h("ul", { class: "cards" }, records.map((r) => memoryCard(r, { subject, history, upcoming: upcomingIds.has(r.memory_id) }))),
          ),
        )
      : h("p", { class: "muted nothing" }, `Nothing current in ${family} at `, date(at.toISOString()), `. Its history keeps ${history.length} ${history.length === 1 ? "record" : "records"}.`),
    h("h3", { class: "timeline-title" }, "Timeline: what was believed when"),
    figure ?? h("p", { class: "muted" }, "No authorised windows to draw (only observations or historical claims)."),
    rows.length > TIMELINE_ROWS
      ? h("p", {}, h("a", { href: link(["s", subject, "h", family]) }, `All ${rows.length} revisions in the history`))
      : null,
  );
}

function memoryCard(r, { subject, history, upcoming }) {
  const slot = h("div", { class: "event-slot" });
  const badges = [
    statusBadge(r),
    upcoming ? badge("upcoming", "info", "Valid from a later time than shown") : null,
    r.authorised ? badge("authorised", "ok") : badge(`not authorised: ${r.exclusion ?? "observation"}`, "warn"),
    r.operational_setting_confirmed
      ? badge("confirmed setting", "info", "From a setting channel (account service, system)")
      : badge("not a business setting", "muted", "What was said; check business settings against live state"),
  ];
  const claimId = `claim-${r.memory_id}`;
  return h(
    "li",
    { class: "card", "data-memory-id": r.memory_id, "aria-labelledby": claimId },
    h(
      "div",
      { class: "card-main" },
      h("p", { class: "claim", id: claimId }, r.claim),
      valueLine(r),
      h("p", { class: "valid" }, "valid ", h("strong", {}, date(r.valid_from)), " → ", h("strong", {}, date(r.valid_until, "open-ended"))),
      h("div", { class: "badges" }, badges),
      r.grounding ? h("blockquote", { class: "grounding", title: "The words it was taken from" }, `“${r.grounding}”`) : null,
    ),
    h(
      "dl",
      { class: "prov", "aria-label": "Provenance" },
      h("div", {}, h("dt", {}, "said by"), h("dd", {}, r.source_actor_id)),
      h("div", {}, h("dt", {}, "authenticated"), h("dd", {}, yesNo(r.source_identity_authenticated))),
      h("div", {}, h("dt", {}, "authorized"), h("dd", {}, yesNo(r.scope_authorized))),
      h("div", {}, h("dt", {}, "channel"), h("dd", {}, r.source_channel)),
      h(
        "div",
        {},
        h("dt", {}, "source event"),
        h("dd", {}, h("button", { type: "button", class: "linklike", "aria-expanded": "false", onclick: (e) => toggleEvent(e.currentTarget, r.source_event_id, slot) }, r.source_event_id)),
      ),
      h("div", {}, h("dt", {}, "recorded"), h("dd", {}, date(r.recorded_at), " ", h("span", { class: "nowrap" }, `· rev ${r.revision}`))),
      h("div", {}, h("dt", {}, "confidence"), h("dd", {}, r.confidence.toFixed(2))),
    ),
    slot,
    h(
      "div",
      { class: "card-actions" },
      h("a", { href: link(["s", subject, "h", r.family, r.memory_id]), class: "button quiet" }, "History"),
      mayWrite() ? h("button", { type: "button", onclick: () => openCorrect({ subject, family: r.family, record: r }) }, "Correct…") : null,
      mayWrite() && r.status === "active"
        ? h("button", { type: "button", class: "danger", onclick: () => openRevoke(r, history) }, "Revoke…")
        : null,
    ),
  );
}

// -- the history of a family --------------------------------------------------------------

export async function renderHistory({ subject, family, memory }) {
  const [history, changes] = await Promise.all([
    call(subjectPath(subject, "families", family, "history"), { query: { include_revoked: mayAdmin() ? "true" : undefined } }),
    call(subjectPath(subject, "families", family, "changes")),
  ]);
  const rows = beliefs(history, changes);
  const figure = rows.length
    ? timelineFigure(family, rows, {
        validAt: Date.now(),
        selected: memory,
        tooltip,
        onOpen: (r) => {
          location.hash = link(["s", subject, "h", family, r.memory_id]);
        },
      })
    : null;
  const selected = memory ? history.find((r) => r.memory_id === memory) : null;
  const revokedHidden = !mayAdmin() && changes.some((c) => c.action === "revoked");
  return [
    h("p", { class: "crumbs" }, h("a", { href: link(["s", subject]) }, `← ${subject}`)),
    h("h1", { tabindex: -1 }, `History of ${family}`),
    h(
      "p",
      { class: "intro" },
      "Two time axes: ",
      h("strong", {}, "valid time"),
      " (when a claim is meant to be true, across) and ",
      h("strong", {}, "record time"),
      " (when memledger held it, down: each row is a revision). Nothing is overwritten: a correction closes the old window and opens a new one; a revocation marks a record revoked.",
    ),
    memory && !selected ? h("p", { class: "warn", role: "status" }, `Memory ${memory} is not in this history${mayAdmin() ? "" : " (revoked records are shown to admin keys only)"}.`) : null,
    figure ?? empty(`No authorised windows in ${family} for ${subject}.`),
    h("h2", {}, "Records, in record-time order"),
    history.length
      ? recordsTable(subject, history, memory)
      : empty(`No records in ${family} for ${subject}.`, revokedHidden ? "Revoked records are shown to admin keys only." : ""),
    revokedHidden ? h("p", { class: "hint" }, "Revoked records are shown to admin keys only; the change log below lists them by id.") : null,
    h("h2", {}, "Change log"),
    changesTable(changes),
  ];
}

function recordsTable(subject, history, selected) {
  const heads = ["Memory", "Status", "Valid time", "Record time", "Source", h("span", { class: "visually-hidden" }, "Actions")];
  return table(
    "records",
    heads,
    history.map((r) => {
      const mine = r.memory_id === selected;
      return {
        attrs: { "data-memory-id": r.memory_id, "data-status": r.status, class: mine ? "selected" : null, "aria-current": mine ? "true" : null, tabindex: mine ? -1 : null, "data-focus": mine ? true : null },
        cells: [
          h(
            "td",
            { class: "wide" },
            h("span", { class: "claim" }, r.claim),
            h("br"),
            h("code", { class: "id" }, r.memory_id),
            " ",
            badge(r.kind, r.kind === "observation" ? "warn" : "muted"),
            r.supersedes ? h("div", { class: "hint" }, "remnant of ", h("span", { class: "id" }, r.supersedes)) : null,
          ),
          [statusBadge(r), r.exclusion ? h("div", { class: "hint" }, r.exclusion) : null, h("div", { class: "hint nowrap" }, `rev ${r.revision} · gen ${r.generation}`)],
          h("td", { class: "span" }, h("span", {}, date(r.valid_from), " →"), h("span", {}, date(r.valid_until, "open-ended"))),
          h(
            "td",
            { class: "span" },
            h("span", {}, date(r.recorded_at), " →"),
            h("span", {}, date(r.superseded_at, "now")),
            r.closed_by ? h("div", { class: "hint" }, `closed by ${r.closed_by}`) : null,
          ),
          [
            `${r.source_actor_id} · ${r.source_channel}`,
            h(
              "div",
              { class: "hint" },
              r.source_identity_authenticated ? "authenticated" : h("strong", {}, "not authenticated"),
              " · ",
              r.scope_authorized ? "authorized" : h("strong", {}, "not authorized"),
            ),
            h("div", { class: "hint" }, "event ", h("span", { class: "id" }, r.source_event_id)),
          ],
          mayWrite() && r.status === "active" ? h("button", { type: "button", class: "danger small", onclick: () => openRevoke(r, history) }, "Revoke…") : null,
        ],
      };
    }),
  );
}

function changesTable(changes) {
  if (!changes.length) return empty("No changes recorded.");
  return table(
    "changes",
    ["#", "When", "Action", "Memory", "Status", "Rev · gen", "Cause"],
    changes.map((c) => ({
      attrs: { "data-action": c.action },
      cells: [String(c.seq), date(c.at), c.action, h("code", { class: "id" }, c.memory_id), c.status, `${c.revision} · ${c.generation}`, h("td", { class: "wide" }, c.cause, c.note ? h("div", { class: "hint" }, c.note) : null)],
    })),
  );
}

/** A memory's value as a reader wants it: a turn as who said it, in which session, and
 * its words; any other value as JSON, with its scope. */
function valueLine(r) {
  const v = r.value;
  if (r.kind === "episode" && v && typeof v === "object" && typeof v.text === "string") {
    const who = [v.speaker, v.role ? `(${v.role})` : null].filter(Boolean).join(" ");
    const where = v.session ? `session ${v.session}` : null;
    return h(
      "p",
      { class: "value episode" },
      h("span", { class: "said-by" }, [who, where].filter(Boolean).join(" · ")),
      who || where ? ": " : null,
      h("q", { class: "said" }, v.text),
    );
  }
  return h(
    "p",
    { class: "value" },
    "value ",
    h("code", {}, valueText(v)),
    r.scope !== "global" ? [" · scope ", h("code", {}, r.scope)] : null,
  );
}
