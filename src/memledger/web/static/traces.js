// Context traces: what recent model calls were given. An expanded trace names each item
// with what it said: a memory the packet held with the statement the model was given
// (from the trace's replay), one left out with its record's claim (GET
// /v1/memories/{id}); a memory the key may not read is shown as not visible.

import { ApiError } from "./api.js";
import { badge, date, empty, errorBox, fill, h, loading, table } from "./dom.js";
import { call, link, state } from "./shared.js";

const LEFT_OUT = {
  expired: "its valid window had ended",
  not_yet_valid: "its valid window had not begun",
  revoked: "revoked",
  superseded: "superseded by a newer record",
  budget: "no room left in the token budget",
};

const MEMORY_ID = /^mem-/;
const AT_ONCE = 8; // memories fetched together

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
      h("span", { class: "trace-when" }, date(t.created_at)),
      " ",
      h("span", { class: "trace-request" }, `“${t.request}”`),
      h("span", { class: "hint" }, ` · ${t.subject ?? "no subject"} · ${t.memories.length} included · ${t.excluded} left out · ${t.tokens} tokens`),
    ),
    body,
  );
  return h("li", {}, details);
}

// -- what each item said ------------------------------------------------------------------

/** What the replay of ``traceId`` says of each memory it held, by memory id, and which
 * were revoked since; empty when the replay cannot be had (the ids are fetched then). */
async function replayed(traceId) {
  try {
    const replay = await call(`/v1/traces/${encodeURIComponent(traceId)}/replay`, { method: "POST" });
    const said = new Map();
    for (const item of replay.items) {
      if (!item.memory_id) continue;
      const f = item.fields ?? {};
      said.set(item.memory_id, f.missing ? { gone: f.missing } : { statement: f.statement, kind: f.kind, family: f.family });
    }
    return { said, revoked: new Set(replay.revoked_since) };
  } catch {
    return { said: new Map(), revoked: new Set() };
  }
}

/** A memory's claim, kind and family as the key may read it; ``hidden`` when the server
 * answers it as missing or forbidden (another namespace, another tenant, erased). */
async function fetched(memoryId) {
  try {
    const r = await call(`/v1/memories/${encodeURIComponent(memoryId)}`);
    return { statement: r.claim, kind: r.kind, family: r.family, status: r.status };
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 403)) return { hidden: true };
    return { failed: error.message };
  }
}

/** What every memory id of ``items`` and ``left`` said: the replay's statement, or the
 * record's claim fetched ``AT_ONCE`` at a time. */
async function statements(traceId, items, left) {
  const { said, revoked } = await replayed(traceId);
  const wanted = [...items.map((i) => i.memory_id), ...left.map((i) => i.key)].filter((id) => id && MEMORY_ID.test(id) && !said.has(id));
  const missing = [...new Set(wanted)];
  for (let at = 0; at < missing.length; at += AT_ONCE) {
    const batch = missing.slice(at, at + AT_ONCE);
    const answers = await Promise.all(batch.map(fetched));
    batch.forEach((id, n) => said.set(id, answers[n]));
  }
  return { said, revoked };
}

/** The words of an item that is not a memory (a constraint, live state, material, a
 * document): its first text field. */
function otherText(fields) {
  for (const name of ["statement", "rule", "text", "found"]) {
    if (typeof fields?.[name] === "string") return fields[name];
  }
  return null;
}

/** The "Item" cell: what it said, then its kind, family and id (a link to its history
 * when the key may read it). */
function itemCell(id, info, other) {
  const code = h("code", { class: "id" }, id);
  if (info?.hidden) {
    return h("td", { class: "wide", "data-visible": "false" }, h("div", { class: "said muted" }, "not visible"), h("div", { class: "hint" }, code, " · your key may not read this memory"));
  }
  if (info?.gone || info?.failed) {
    return h("td", { class: "wide" }, h("div", { class: "said muted" }, info.gone ?? `could not be loaded: ${info.failed}`), h("div", { class: "hint" }, code));
  }
  if (!info) return h("td", { class: "wide" }, other ? h("div", { class: "said" }, other) : null, h("div", { class: "hint" }, code));
  const about = [info.kind, info.family].filter(Boolean).join(" · ");
  return h(
    "td",
    { class: "wide" },
    h("div", { class: "said" }, info.statement ?? ""),
    h("div", { class: "hint" }, about ? `${about} · ` : "", h("a", { href: link(["m", id]) }, code), info.status && info.status !== "active" ? [" ", badge(info.status, "muted")] : null),
  );
}

async function loadTrace(traceId, body) {
  fill(body, loading("Loading the trace"));
  try {
    const stored = await call(`/v1/traces/${encodeURIComponent(traceId)}`);
    const items = stored.body.items ?? [];
    const left = stored.body.excluded ?? [];
    const { said, revoked } = await statements(traceId, items, left);
    body.dataset.loaded = "1";
    fill(
      body,
      h("p", { class: "hint" }, `${stored.trace_id} · sha256 ${stored.rendered_sha256.slice(0, 16)}…`),
      h("h3", {}, "Included"),
      items.length
        ? table(
            "included",
            ["Section", "Item", "Revision", "Relevance", "Tokens"],
            items.map((i) => ({
              attrs: { "data-key": i.key },
              cells: [
                i.section,
                i.memory_id ? itemCell(i.memory_id, said.get(i.memory_id)) : itemCell(i.key, null, otherText(i.fields)),
                [i.revision ?? "—", revoked.has(i.memory_id) ? [" ", badge("revoked since", "bad")] : null],
                typeof i.relevance === "number" ? i.relevance.toFixed(2) : "—",
                String(i.tokens ?? "—"),
              ],
            })),
          )
        : h("p", { class: "muted" }, "Nothing was included."),
      h("h3", {}, "Left out"),
      left.length
        ? table(
            "excluded",
            ["Section", "Item", "Why"],
            left.map((i) => ({
              attrs: { "data-key": i.key },
              cells: [
                i.section,
                itemCell(i.key, MEMORY_ID.test(i.key) ? said.get(i.key) : null),
                [i.reason, LEFT_OUT[i.reason] ? h("span", { class: "hint" }, ` (${LEFT_OUT[i.reason]})`) : null],
              ],
            })),
          )
        : h("p", { class: "muted" }, "No candidate was left out."),
    );
  } catch (error) {
    fill(body, errorBox(error));
  }
}
