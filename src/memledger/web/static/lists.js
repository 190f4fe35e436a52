// The tenant-wide lists: the review queue and search results (traces.js: the traces).

import { openReview } from "./actions.js";
import { badge, date, empty, h, table, valueText } from "./dom.js";
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
        `${item.review_id} · held `,
        date(item.created_at),
        " · ",
        h("button", { type: "button", class: "linklike", "aria-expanded": "false", onclick: (e) => toggleEvent(e.currentTarget, item.event_id, slot) }, "what was said"),
      ),
      slot,
      h("p", {}, h("strong", {}, "Why held: "), item.reason),
      table(
        "claims",
        ["Family", "Kind", "Statement", "Value", "Scope", "Valid"],
        item.claims.map((c) => ({
          cells: [
            c.family,
            c.kind,
            [c.statement, c.polarity === "retract" ? badge("retract", "warn") : null],
            h("code", {}, valueText(c.value)),
            c.scope,
            [date(c.valid_from, "from the event"), " → ", date(c.valid_until, "open-ended")],
          ],
        })),
      ),
      resolved
        ? h("p", { class: "resolved" }, badge(item.resolution ?? "resolved", item.resolution === "accepted" ? "ok" : "muted"), ` by ${item.resolved_by ?? "?"} at `, date(item.resolved_at), ": ", item.resolution_reason ?? "")
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
              h("p", { class: "hint" }, h("a", { href: link(["s", r.subject]) }, r.subject), ` · ${r.family} · ${r.kind} · valid `, date(r.valid_from), " → ", date(r.valid_until, "open-ended")),
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
