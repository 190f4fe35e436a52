// What every part of the page shares: who is signed in, links, the API call that
// signs the person out when their key stops working, the tooltip and the toast.

import { ApiError, api } from "./api.js";
import { badge, date, errorBox, fill, h, loading } from "./dom.js";

export const $ = (id) => document.getElementById(id);

export const state = {
  me: null,
  families: new Map(), // the tenant's family schema, by name
  subject: null, // the subject last opened
  pages: { prefix: "", after: null, back: [], next: null },
  ticket: 0, // the render in progress; an older one drops its answer
  reviews: 0,
};

/** What app.js plugs in: sign the person out; reload what an action changed. */
export const hooks = { signOut: () => {}, refresh: () => {} };

export const mayWrite = () => state.me && state.me.role !== "read";
export const mayAdmin = () => state.me && state.me.role === "admin";

export function link(parts, params) {
  const path = `#/${parts.map((p) => encodeURIComponent(p)).join("/")}`;
  if (!params) return path;
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value) query.set(name, value);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

// -- the shared tooltip and toast --------------------------------------------------------

export const tooltip = {
  target: null,
  show(target, text) {
    const tip = $("tooltip");
    tip.textContent = text;
    tip.hidden = false;
    this.target = target;
    this.place();
  },
  place() {
    const tip = $("tooltip");
    if (!this.target || tip.hidden) return;
    const box = this.target.getBoundingClientRect();
    const width = Math.min(420, window.innerWidth - 16);
    tip.style.maxWidth = `${width}px`;
    const left = Math.max(8, Math.min(box.left, window.innerWidth - width - 8));
    tip.style.left = `${left}px`;
    tip.style.top = `${box.bottom + 6}px`;
  },
  hide() {
    this.target = null;
    $("tooltip").hidden = true;
  },
};

let toastTimer = null;
export function toast(text) {
  const box = $("toast");
  box.textContent = text;
  box.classList.add("shown");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(hideToast, 8000);
}

export function hideToast() {
  clearTimeout(toastTimer);
  $("toast").classList.remove("shown");
  $("toast").textContent = "";
}

/** Call the API; a key that stopped working signs the person out, saying why. */
export async function call(path, options) {
  try {
    return await api(path, options);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401 && state.me) {
      hooks.signOut(`Signed out: ${error.message}`);
    }
    throw error;
  }
}

export function yesNo(value) {
  return value ? h("span", { class: "yes" }, "yes") : h("span", { class: "no" }, "no");
}

export function statusBadge(r) {
  const tone = { active: "ok", superseded: "muted", retracted: "muted", revoked: "bad", historical: "warn" }[r.status] ?? "muted";
  return badge(r.status, tone);
}

/** Show or hide the source event under ``button`` in ``slot``. */
export async function toggleEvent(button, eventId, slot) {
  if (button.getAttribute("aria-expanded") === "true") {
    button.setAttribute("aria-expanded", "false");
    fill(slot);
    return;
  }
  button.setAttribute("aria-expanded", "true");
  fill(slot, loading("Loading the event"));
  try {
    const found = await call(`/v1/events/${encodeURIComponent(eventId)}`);
    const e = found.event;
    fill(
      slot,
      h(
        "div",
        { class: "event" },
        h("p", { class: "event-head" }, `Event ${e.event_id} · ${e.channel} · by ${e.actor.id} (${e.actor.authenticated ? "authenticated" : "not authenticated"}) · occurred `, date(e.occurred_at), e.sequence !== null ? ` · sequence ${e.sequence}` : ""),
        h("blockquote", {}, e.text),
      ),
    );
  } catch (error) {
    fill(slot, errorBox(error));
  }
}
