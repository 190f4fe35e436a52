// memledger's web page: sign in with an API key, pick a subject, see what is held
// about it and why, and correct it. Plain ES modules over the same origin's HTTP API:
// shared.js (state, links, the API call), memories.js (a subject, a family's history),
// lists.js (review queue, search), traces.js (context traces), scope.js (where search
// looks), actions.js (revoke, correct, review), timeline.js (the picture), dom.js (DOM
// without HTML strings), api.js (HTTP).

import { bindDialogs } from "./actions.js";
import { ApiError, api, forget, session } from "./api.js";
import { date, empty, errorBox, fill, h, loading } from "./dom.js";
import { renderReviews, renderSearch } from "./lists.js";
import { renderHistory, renderSubject } from "./memories.js";
import { bindScope, scopeOf, searchLink, showScope } from "./scope.js";
import { $, call, hideToast, hooks, link, state, tooltip } from "./shared.js";
import { renderTraces } from "./traces.js";

const PAGE = 25;

// -- routes: #/, #/s/<subject>, #/s/<subject>/h/<family>[/<memory>], #/m/<memory>,
//    #/reviews, #/traces, #/search?q=..&subject=..

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query] = raw.split("?", 2);
  let parts;
  try {
    parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    parts = [];
  }
  const params = new URLSearchParams(query ?? "");
  const [head, ...rest] = parts;
  if (head === "s" && rest.length >= 1) {
    if (rest[1] === "h" && rest[2]) {
      return { view: "history", subject: rest[0], family: rest[2], memory: rest[3] ?? null };
    }
    return { view: "subject", subject: rest[0], validAt: params.get("valid_at") };
  }
  if (head === "m" && rest[0]) return { view: "memory", memory: rest[0] };
  if (head === "reviews") return { view: "reviews", all: params.get("all") === "1" };
  if (head === "traces") return { view: "traces", subject: params.get("subject") };
  if (head === "search") return { view: "search", q: params.get("q") ?? "", subject: params.get("subject") };
  return { view: "home" };
}

// -- signing in and out ------------------------------------------------------------------

async function signIn(key) {
  const me = await api("/v1/me", { key });
  session.key = key;
  state.me = me;
  const schema = await api("/v1/families");
  state.families = new Map(schema.map((f) => [f.name, f]));
  $("signin").hidden = true;
  $("app").hidden = false;
  $("who").hidden = false;
  $("search-form").hidden = false;
  const role = { admin: "admin key", write: "write key", read: "read-only key" }[me.role] ?? me.role;
  fill(
    $("who-text"),
    h("span", { class: "who-tenant", title: "tenant" }, me.tenant),
    " · ",
    h("span", { title: `actor (${me.principal})` }, me.actor),
    " · ",
    h("span", { title: `grants: ${me.grants.join(", ") || "none"}` }, role),
  );
  loadSubjects();
  countReviews();
  route();
}

function signOut(message) {
  session.key = null;
  forget();
  state.me = null;
  state.subject = null;
  state.pages = { prefix: "", after: null, back: [], next: null };
  $("app").hidden = true;
  $("who").hidden = true;
  $("search-form").hidden = true;
  fill($("view"));
  fill($("subject-list"));
  $("subject-prefix").value = "";
  $("signin").hidden = false;
  const error = $("signin-error");
  error.hidden = !message;
  error.textContent = message ?? "";
  $("key").value = "";
  $("key").focus();
}

// -- the subject list ------------------------------------------------------------------

async function loadSubjects() {
  const list = $("subject-list");
  const { prefix, after } = state.pages;
  list.setAttribute("aria-busy", "true");
  fill(list, loading("Loading subjects"));
  try {
    const page = await call("/v1/subjects", { query: { prefix, after, limit: PAGE } });
    state.pages.next = page.next;
    renderSubjects(page.subjects);
  } catch (error) {
    fill(list, errorBox(error));
    state.pages.next = null;
  } finally {
    list.removeAttribute("aria-busy");
    $("subjects-prev").disabled = state.pages.back.length === 0;
    $("subjects-next").disabled = !state.pages.next;
  }
}

function renderSubjects(subjects) {
  const list = $("subject-list");
  const { prefix } = state.pages;
  if (!subjects.length) {
    const open = prefix
      ? h("a", { href: link(["s", prefix]), class: "button" }, `Open ${prefix} anyway`)
      : null;
    fill(
      list,
      prefix
        ? empty(`No subjects start with “${prefix}”.`, open)
        : empty("No subjects yet.", "A subject appears here once an event about it is ingested."),
    );
    return;
  }
  fill(
    list,
    h(
      "ul",
      { class: "subject-list" },
      subjects.map((item) =>
        h(
          "li",
          {},
          h(
            "a",
            {
              href: link(["s", item.subject]),
              "aria-current": item.subject === state.subject ? "true" : null,
              "data-subject": item.subject,
            },
            h("span", { class: "subject-name" }, item.subject),
            h(
              "span",
              { class: "subject-meta" },
              h("span", {}, `${item.families} ${item.families === 1 ? "family" : "families"} · ${item.events} ${item.events === 1 ? "event" : "events"}`),
              item.last_at ? h("span", {}, "last change ", date(item.last_at)) : null,
            ),
          ),
        ),
      ),
    ),
  );
}

function markSubject() {
  for (const a of $("subject-list").querySelectorAll("a[data-subject]")) {
    if (a.dataset.subject === state.subject) a.setAttribute("aria-current", "true");
    else a.removeAttribute("aria-current");
  }
}

async function countReviews() {
  try {
    const open = await call("/v1/reviews");
    state.reviews = open.length;
  } catch {
    state.reviews = 0;
  }
  const count = $("review-count");
  count.hidden = state.reviews === 0;
  count.textContent = String(state.reviews);
  count.setAttribute("aria-label", `${state.reviews} open`);
}

// -- views -----------------------------------------------------------------------------

function setTab(view) {
  const tabs = { home: "tab-memories", subject: "tab-memories", history: "tab-memories", memory: "tab-memories", reviews: "tab-reviews", traces: "tab-traces" };
  for (const id of ["tab-memories", "tab-reviews", "tab-traces"]) {
    if (tabs[view] === id) $(id).setAttribute("aria-current", "page");
    else $(id).removeAttribute("aria-current");
  }
}

async function route({ focus = true } = {}) {
  if (!state.me) return;
  const where = parseRoute();
  const ticket = ++state.ticket;
  const view = $("view");
  tooltip.hide();
  setTab(where.view);
  if (where.view === "subject" || where.view === "history") state.subject = where.subject;
  else if ((where.view === "search" || where.view === "traces") && where.subject) state.subject = where.subject;
  markSubject();
  showScope(scopeOf(where, state.subject));
  view.setAttribute("aria-busy", "true");
  fill(view, loading());
  let content;
  try {
    content = await VIEWS[where.view](where);
  } catch (error) {
    content = [h("h1", { tabindex: -1 }, "Something went wrong"), errorBox(error)];
  }
  if (ticket !== state.ticket || content === null) return;
  fill(view, content);
  view.removeAttribute("aria-busy");
  const heading = view.querySelector("h1");
  const target = view.querySelector("[data-focus]") ?? heading;
  if (focus && target) target.focus({ preventScroll: false });
}

const VIEWS = {
  home: async () => [
    h("h1", { tabindex: -1 }, "Memories"),
    h(
      "div",
      { class: "intro" },
      h("p", {}, "Choose a subject to see what memledger holds about it: its current memories by family and kind, with who said each one and whether they were authenticated and allowed to; a timeline of each family; and the history of every record."),
      h("p", {}, "Memories are what was said, not business settings. Valid time is when a claim is meant to be true; record time is when memledger held it. Corrections close windows; nothing is overwritten."),
      h("p", {}, "Press ", h("kbd", {}, "/"), " to search, ", h("kbd", {}, "?"), " for shortcuts."),
    ),
  ],
  subject: renderSubject,
  history: renderHistory,
  memory: async ({ memory }) => {
    const record = await call(`/v1/memories/${encodeURIComponent(memory)}`);
    location.replace(link(["s", record.subject, "h", record.family, record.memory_id]));
    return null;
  },
  reviews: renderReviews,
  traces: renderTraces,
  search: renderSearch,
};

// -- wiring --------------------------------------------------------------------------------

function editable(target) {
  return target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

function anyDialogOpen() {
  return document.querySelector("dialog[open]") !== null;
}

function bind() {
  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = $("key").value.trim();
    const error = $("signin-error");
    if (!key) {
      error.textContent = "Paste an API key (it starts with mlk_).";
      error.hidden = false;
      $("key").focus();
      return;
    }
    error.hidden = true;
    const button = event.submitter ?? $("signin-form").querySelector("button");
    button.disabled = true;
    button.textContent = "Signing in…";
    try {
      await signIn(key);
    } catch (failure) {
      error.textContent = failure.message;
      error.hidden = false;
      $("key").focus();
    } finally {
      button.disabled = false;
      button.textContent = "Sign in";
    }
  });
  $("sign-out").addEventListener("click", () => {
    signOut();
    history.replaceState(null, "", "#/");
  });
  $("help-button").addEventListener("click", () => $("help-dialog").showModal());
  $("help-close").addEventListener("click", () => $("help-dialog").close());

  let timer = null;
  const filter = () => {
    clearTimeout(timer);
    state.pages = { prefix: $("subject-prefix").value.trim(), after: null, back: [], next: null };
    loadSubjects();
  };
  $("subject-prefix").addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(filter, 250);
  });
  $("subject-filter").addEventListener("submit", (event) => {
    event.preventDefault();
    filter();
  });
  $("subjects-next").addEventListener("click", () => {
    if (!state.pages.next) return;
    state.pages.back.push(state.pages.after);
    state.pages.after = state.pages.next;
    loadSubjects();
  });
  $("subjects-prev").addEventListener("click", () => {
    if (!state.pages.back.length) return;
    state.pages.after = state.pages.back.pop();
    loadSubjects();
  });

  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = searchLink($("search").value.trim());
  });
  bindScope(() => parseRoute().view);
  bindDialogs();

  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") tooltip.hide();
    if (event.ctrlKey || event.metaKey || event.altKey || anyDialogOpen() || editable(event.target)) return;
    if (event.key === "/" && state.me) {
      event.preventDefault();
      $("search").focus();
      $("search").select();
    } else if (event.key === "?" && state.me) {
      event.preventDefault();
      $("help-dialog").showModal();
    }
  });
  window.addEventListener("hashchange", () => {
    hideToast();
    route();
  });
  window.addEventListener("scroll", () => tooltip.place(), { passive: true });
}

async function start() {
  bind();
  const key = session.key;
  if (!key) {
    signOut();
    return;
  }
  try {
    await signIn(key);
  } catch (error) {
    signOut(error instanceof ApiError && error.status === 401 ? `Signed out: ${error.message}` : error.message);
  }
}

hooks.signOut = signOut;
hooks.refresh = () => {
  loadSubjects();
  countReviews();
  route();
};
start();
