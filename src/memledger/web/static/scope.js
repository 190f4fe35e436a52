// Where the search box looks: one subject or the whole tenant. The address is the one
// source of truth: the selector is set from the route on every navigation (and reload),
// the search view's heading is written from the same route, and changing the selector
// on a search view searches again, so the two never disagree.

import { $, link } from "./shared.js";

/**
 * The scope of a parsed route: ``subject``, the subject the selector's first choice
 * names (the route's own, else ``last``, the subject last opened; null when none), and
 * ``chosen``, the choice selected ("subject" or "tenant").
 */
export function scopeOf(where, last) {
  if (where.view === "subject" || where.view === "history") return { subject: where.subject, chosen: "subject" };
  if ((where.view === "search" || where.view === "traces") && where.subject) return { subject: where.subject, chosen: "subject" };
  return { subject: last ?? null, chosen: "tenant" };
}

/** Set the selector to ``scope``. */
export function showScope({ subject, chosen }) {
  const select = $("search-scope");
  const option = select.querySelector('option[value="subject"]');
  option.textContent = subject ? `in ${subject}` : "this subject (none open)";
  option.dataset.subject = subject ?? "";
  option.disabled = !subject;
  select.value = subject ? chosen : "tenant";
}

/** The address of a search for ``q`` where the selector says. */
export function searchLink(q) {
  const select = $("search-scope");
  const subject = select.value === "subject" ? select.selectedOptions[0]?.dataset.subject : null;
  return link(["search"], { q, subject: subject || null });
}

/** Wire the selector: on a search view, a new choice is a new search (a new address). */
export function bindScope(currentView) {
  $("search-scope").addEventListener("change", () => {
    if (currentView() !== "search") return;
    location.hash = searchLink($("search").value.trim());
  });
}
