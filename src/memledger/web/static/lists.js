// The tenant-wide lists: the review queue, recent context traces, search results.

import { openReview } from "./actions.js";
import { badge, empty, errorBox, fill, h, loading, valueText, when } from "./dom.js";
import { $, call, link, mayAdmin, state, statusBadge, toggleEvent } from "./shared.js";

// -- the review queue ------------------------------------------------------------------

export async function renderReviews({ all }) {
  const items = await call("/v1/reviews", { query: { all: all ? "true" : undefined } });
  const toggle = h("a", { href: all ? "#/reviews" : "#/reviews?all=1", class: "button quiet" }, all ? "Open items only" : "Include resolved items");
  const intro = h(
    "p",
    { class: "intro" },
    "Events whose claims could not be ordered against what is held, or contradict each other, wait here. They change nothing until an admin accepts them; rejecting closes them. Either way who decided and why is recorded.",
    mayAdmin() ? "" : ` Only admin keys can accept or reject; yours is a ${state.me.role} key.`,
  );
  const head = [h("h1", { tabindex: -1 }, "Review queue"), h("div", { class: "toolbar" }, toggle), intro];
  if (!items.length) {
    return [...head, empty(all ? "No review items at all." : "The review queue is empty.", "Nothing waits for a decision.")];
  }
  return [...head, h("ul", { class: "cards reviews" }, items.map(reviewCard))];
}

function reviewCard(item) {
  const resolved = item.resolved_at !== null;
  const slot = h("div", { class: "event-slot" });
  return h(
    "li",
    { class: "card review", "data-review-id": item.review_id },
    h(
      "div",
      { class: "card-main" },
      h("p", { class: "claim" }, `Event ${item.event_id} about `, h("a", { href: link(["s", item.subject]) }, item.subject)),
      h(
        "p",
        { class: "hint" },
        `${item.review_id} · held ${when(item.created_at)} · `,
        h("button", { type: "button", class: "linklike", "aria-expanded": "false", onclick: (e) => toggleEvent(e.currentTarget, item.event_id, slot) }, "what was said"),
      ),
      slot,
      h("p", {}, h("strong", {}, "Why held: "), item.reason),
      h(
        "table",
        { class: "data" },
        h("thead", {}, h("tr", {}, ["Family", "Kind", "Statement", "Value", "Scope", "Valid"].map((t) => h("th", { scope: "col" }, t)))),
        h(
          "tbody",
          {},
          item.claims.map((c) =>
            h(
              "tr",
              {},
              h("td", {}, c.family),
              h("td", {}, c.kind),
              h("td", {}, c.statement, c.polarity === "retract" ? badge("retract", "warn") : null),
              h("td", {}, h("code", {}, valueText(c.value))),
              h("td", {}, c.scope),
              h("td", {}, `${when(c.valid_from, "from the event")} → ${when(c.valid_until, "open-ended")}`),
            ),
          ),
        ),
      ),
      resolved
        ? h("p", { class: "resolved" }, badge(item.resolution ?? "resolved", item.resolution === "accepted" ? "ok" : "muted"), ` by ${item.resolved_by ?? "?"} at ${when(item.resolved_at)}: `, item.resolution_reason ?? "")
        : null,
    ),
    !resolved && mayAdmin()
      ? h(
          "div",
          { class: "card-actions" },
          h("button", { type: "button", class: "primary", onclick: () => openReview(item, "accept") }, "Accept…"),
          h("button", { type: "button", onclick: () => openReview(item, "reject") }, "Reject…"),
        )
      : null,
  );
}

// -- context traces ----------------------------------------------------------------------

const LEFT_OUT = {
  expired: "its valid window had ended",
  not_yet_valid: "its valid window had not begun",
  revoked: "revoked",
  superseded: "superseded by a newer record",
  budget: "no room left in the token budget",
};

export async function renderTraces({ subject }) {
  const traces = await call("/v1/traces", { query: { subject, limit: 20 } });
  const head = [
    h("h1", { tabindex: -1 }, subject ? `Context traces of ${subject}` : "Context traces"),
    h(
      "div",
      { class: "toolbar" },
      subject ? h("a", { href: "#/traces", class: "button quiet" }, "All subjects") : null,
      !subject && state.subject ? h("a", { href: link(["traces"], { subject: state.subject }), class: "button quiet" }, `Only ${state.subject}`) : null,
    ),
    h("p", { class: "intro" }, "What recent model calls were given: each packet's memories (with id and revision) and the candidates left out, with why. Newest first."),
  ];
  if (!traces.length) {
    return [...head, empty(subject ? `No context traces for ${subject} yet.` : "No context traces yet.", "A trace is stored for every context packet built (POST /v1/context).")];
  }
  return [...head, h("ul", { class: "traces" }, traces.map(traceItem))];
}

function traceItem(t) {
  const body = h("div", { class: "trace-body" });
  const details = h(
    "details",
    {
      class: "trace",
      "data-trace-id": t.trace_id,
      ontoggle: (event) => {
        if (event.currentTarget.open && !body.dataset.loaded) loadTrace(t.trace_id, body);
      },
    },
    h(
      "summary",
      {},
      h("span", { class: "trace-when" }, when(t.created_at)),
      " ",
      h("span", { class: "trace-request" }, `“${t.request}”`),
      h("span", { class: "hint" }, ` · ${t.subject ?? "no subject"} · ${t.memories.length} included · ${t.excluded} left out · ${t.tokens} tokens`),
    ),
    body,
  );
  return h("li", {}, details);
}

async function loadTrace(traceId, body) {
  fill(body, loading("Loading the trace"));
  try {
    const stored = await call(`/v1/traces/${encodeURIComponent(traceId)}`);
    const items = stored.body.items ?? [];
    const left = stored.body.excluded ?? [];
    body.dataset.loaded = "1";
    fill(
      body,
      h("p", { class: "hint" }, `${stored.trace_id} · sha256 ${stored.rendered_sha256.slice(0, 16)}…`),
      h("h3", {}, "Included"),
      items.length
        ? h(
            "table",
            { class: "data included" },
            h("thead", {}, h("tr", {}, ["Section", "Item", "Revision", "Relevance", "Tokens"].map((x) => h("th", { scope: "col" }, x)))),
            h(
              "tbody",
              {},
              items.map((i) =>
                h(
                  "tr",
                  {},
                  h("td", {}, i.section),
                  h("td", {}, i.memory_id ? h("a", { href: link(["m", i.memory_id]) }, i.memory_id) : i.key),
                  h("td", {}, i.revision ?? "—"),
                  h("td", {}, typeof i.relevance === "number" ? i.relevance.toFixed(2) : "—"),
                  h("td", {}, String(i.tokens ?? "—")),
                ),
              ),
            ),
          )
        : h("p", { class: "muted" }, "Nothing was included."),
      h("h3", {}, "Left out"),
      left.length
        ? h(
            "table",
            { class: "data excluded" },
            h("thead", {}, h("tr", {}, ["Section", "Item", "Why"].map((x) => h("th", { scope: "col" }, x)))),
            h(
              "tbody",
              {},
              left.map((i) =>
                h(
                  "tr",
                  {},
                  h("td", {}, i.section),
                  h("td", {}, i.key.startsWith("mem-") ? h("a", { href: link(["m", i.key]) }, i.key) : i.key),
                  h("td", {}, i.reason, LEFT_OUT[i.reason] ? h("span", { class: "hint" }, ` (${LEFT_OUT[i.reason]})`) : null),
                ),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No candidate was left out."),
    );
  } catch (error) {
    fill(body, errorBox(error));
  }
}

// -- search --------------------------------------------------------------------------------

export async function renderSearch({ q, subject }) {
  $("search").value = q;
  const where = subject ? `in ${subject}` : "in all subjects";
  const head = h("h1", { tabindex: -1 }, q ? `Search “${q}” ${where}` : "Search");
  if (!q.trim()) return [head, empty("Type what you are looking for in the search box.", "Press / to get there.")];
  const found = await call("/v1/recall", { method: "POST", body: { query: q, subject: subject || undefined, k: 20 } });
  const parts = [head, h("p", { class: "intro" }, "Recall checks every hit against the canonical store: superseded, revoked or unauthorised records are never returned as current.")];
  if (found.abstained || !found.items.length) {
    parts.push(empty("No relevant memory.", "Recall abstains rather than return the nearest unrelated thing."));
  } else {
    parts.push(
      h(
        "ol",
        { class: "cards results" },
        found.items.map((item) => {
          const r = item.record;
          return h(
            "li",
            { class: "card result", "data-memory-id": r.memory_id },
            h(
              "div",
              { class: "card-main" },
              h("p", { class: "claim" }, r.claim),
              h("p", { class: "hint" }, h("a", { href: link(["s", r.subject]) }, r.subject), ` · ${r.family} · ${r.kind} · valid ${when(r.valid_from)} → ${when(r.valid_until, "open-ended")}`),
              h("div", { class: "badges" }, statusBadge(r), badge(`score ${item.score.toFixed(2)}`, "muted"), item.sources.map((x) => badge(x, "info")), item.outdated_by ? badge(`outdated by ${item.outdated_by}`, "warn") : item.possibly_outdated_by ? badge(`possibly outdated by ${item.possibly_outdated_by}`, "warn") : null),
            ),
            h("div", { class: "card-actions" }, h("a", { href: link(["s", r.subject, "h", r.family, r.memory_id]), class: "button quiet" }, "History")),
          );
        }),
      ),
    );
  }
  if (found.excluded.length) {
    parts.push(
      h(
        "details",
        { class: "excluded-hits" },
        h("summary", {}, `${found.excluded.length} candidate(s) left out`),
        h("ul", {}, found.excluded.map((x) => h("li", {}, h("a", { href: link(["m", x.memory_id]) }, x.memory_id), ` — ${x.reason}`))),
      ),
    );
  }
  return parts;
}
