// What a person changes, each behind a dialog that says what it does: revoking a
// memory, correcting one (a new source event), resolving a review item.

import { date, fill, fromLocalInput, h, valueText } from "./dom.js";
import { $, call, hooks, state, toast } from "./shared.js";

// -- revoking ---------------------------------------------------------------------------

let revoking = null;

export function openRevoke(record, history) {
  revoking = record;
  const also = history.filter(
    (r) => r.memory_id !== record.memory_id && r.status === "active" && r.source_event_id === record.source_event_id && r.family === record.family,
  );
  fill(
    $("revoke-what"),
    h("p", { class: "claim" }, record.claim),
    h(
      "p",
      { class: "hint" },
      `${record.family} of ${record.subject} · value `,
      h("code", {}, valueText(record.value)),
      " · valid ",
      date(record.valid_from),
      " → ",
      date(record.valid_until, "open-ended"),
      " · ",
      h("code", {}, record.memory_id),
    ),
  );
  fill(
    $("revoke-also"),
    also.length
      ? h(
          "div",
          { class: "warn" },
          h("p", {}, `Event ${record.source_event_id} also made ${also.length === 1 ? "this claim" : "these claims"} in ${record.family}; ${also.length === 1 ? "it is" : "they are"} revoked with it:`),
          h("ul", {}, also.map((r) => h("li", {}, `${r.claim} (valid `, date(r.valid_from), " → ", date(r.valid_until, "open-ended"), ")"))),
        )
      : null,
  );
  $("revoke-reason").value = "";
  $("revoke-error").hidden = true;
  $("revoke-confirm").disabled = false;
  $("revoke-dialog").showModal();
  $("revoke-reason").focus();
}

async function submitRevoke(event) {
  event.preventDefault();
  const reason = $("revoke-reason").value.trim();
  const error = $("revoke-error");
  if (!reason) {
    error.textContent = "Say why: a reason is required and is kept with the revocation.";
    error.hidden = false;
    $("revoke-reason").focus();
    return;
  }
  const record = revoking;
  $("revoke-confirm").disabled = true;
  try {
    const done = await call(`/v1/memories/${encodeURIComponent(record.memory_id)}/revoke`, { method: "POST", body: { reason } });
    $("revoke-dialog").close();
    const count = done.revoked.length + done.also.reduce((n, r) => n + r.revoked.length, 0);
    toast(`Revoked ${count} ${count === 1 ? "memory" : "memories"} of ${done.family} (revision ${done.revision}). History keeps ${count === 1 ? "it" : "them"}, marked revoked.`);
    hooks.refresh();
  } catch (failure) {
    error.textContent = failure.message;
    error.hidden = false;
  } finally {
    $("revoke-confirm").disabled = false;
  }
}

// -- correcting -------------------------------------------------------------------------

let correcting = null;

function grantCovers(family, scope) {
  return (state.me?.grants ?? []).some((g) => {
    const at = g.indexOf(":");
    const [f, sc] = at < 0 ? [g, "*"] : [g.slice(0, at), g.slice(at + 1)];
    return (f === "*" || f === family) && (sc === "*" || sc === scope);
  });
}

function fillKinds(family, wanted) {
  const kinds = state.families.get(family)?.kinds ?? ["fact", "preference"];
  const select = $("correct-kind");
  fill(select, kinds.map((k) => h("option", { value: k }, k)));
  select.value = kinds.includes(wanted) ? wanted : kinds[0];
}

function checkGrant() {
  const family = $("correct-family").value;
  const scope = $("correct-scope").value.trim() || "global";
  const note = $("correct-grant");
  const own = state.families.get(family)?.own_say && state.me?.actor === correcting?.subject;
  const covered = grantCovers(family, scope) || own;
  note.hidden = covered;
  note.textContent = covered
    ? ""
    : `Your key (${state.me?.actor}) has no grant for ${family} in scope ${scope}: the correction will be kept as an observation, not as a current value.`;
}

export function openCorrect({ subject, family, record }) {
  correcting = { subject, record: record ?? null };
  const names = [...state.families.keys()].sort();
  const chosen = family ?? record?.family ?? names[0];
  const select = $("correct-family");
  fill(select, names.map((n) => h("option", { value: n }, n)));
  if (!names.includes(chosen)) select.append(h("option", { value: chosen }, chosen));
  select.value = chosen;
  select.disabled = Boolean(family);
  fillKinds(chosen, record?.kind === "observation" ? record?.proposed_kind : record?.kind);
  $("correct-title").textContent = record
    ? `Correct ${record.family} of ${subject}`
    : family
      ? `State ${family} of ${subject}`
      : `Add a memory about ${subject}`;
  fill(
    $("correct-corrects"),
    record ? ["Replaces: ", h("q", {}, record.claim), " (valid ", date(record.valid_from), " → ", date(record.valid_until, "open-ended"), ", ", h("code", {}, record.memory_id), ")"] : null,
  );
  $("correct-statement").value = record?.claim ?? "";
  $("correct-value").value = record ? valueText(record.value) : "";
  $("correct-scope").value = record?.scope ?? "global";
  $("correct-from").value = "";
  $("correct-until").value = "";
  $("correct-reason").value = "";
  $("correct-error").hidden = true;
  $("correct-confirm").disabled = false;
  checkGrant();
  $("correct-dialog").showModal();
  $("correct-statement").focus();
}

function parseValue(text) {
  const original = correcting?.record?.value;
  const structured = correcting?.record ? typeof original !== "string" : /^[[{]/.test(text);
  if (!structured) return { value: text };
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { error: `The value must be JSON, like the original (${valueText(original ?? "{}")}).` };
  }
}

function newEventId() {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  const random = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `web-${Date.now().toString(36)}-${random}`;
}

async function submitCorrect(event) {
  event.preventDefault();
  const error = $("correct-error");
  const say = (text, field) => {
    error.textContent = text;
    error.hidden = false;
    if (field) $(field).focus();
  };
  const statement = $("correct-statement").value.trim();
  const reason = $("correct-reason").value.trim();
  const valueTextIn = $("correct-value").value.trim();
  if (!statement) return say("Write the statement: what is true, in words.", "correct-statement");
  if (!valueTextIn) return say("Give the value.", "correct-value");
  if (!reason) return say("Say why: the reason is required and becomes the event's text.", "correct-reason");
  const parsed = parseValue(valueTextIn);
  if (parsed.error) return say(parsed.error, "correct-value");
  const validFrom = fromLocalInput($("correct-from").value);
  const validUntil = fromLocalInput($("correct-until").value);
  if (validFrom && validUntil && validUntil <= validFrom) return say("Valid until must be after valid from.", "correct-until");
  const family = $("correct-family").value;
  const claim = {
    family,
    kind: $("correct-kind").value,
    statement,
    value: parsed.value,
    scope: $("correct-scope").value.trim() || "global",
  };
  if (validFrom) claim.valid_from = validFrom;
  if (validUntil) claim.valid_until = validUntil;
  const metadata = { via: "memledger web page" };
  if (correcting.record) metadata.corrects = correcting.record.memory_id;
  const body = {
    event_id: newEventId(),
    subject: correcting.subject,
    channel: "chat",
    occurred_at: new Date().toISOString(),
    text: reason,
    metadata,
    claims: [claim],
  };
  $("correct-confirm").disabled = true;
  try {
    const receipt = await call("/v1/events", { method: "POST", body });
    $("correct-dialog").close();
    toast(describeReceipt(receipt));
    hooks.refresh();
  } catch (failure) {
    say(failure.message);
  } finally {
    $("correct-confirm").disabled = false;
  }
}

function describeReceipt(receipt) {
  if (receipt.outcome === "review") return `Held for review (${receipt.reason ?? "the order rule could not decide"}): nothing changed until an admin accepts it.`;
  if (receipt.outcome === "queued") return "Queued for extraction.";
  const result = receipt.results[0];
  const rev = receipt.revisions[0]?.revision;
  if (!result) return `Recorded event ${receipt.event_id}.`;
  if (result.disposition === "current") return `Recorded as the current value (revision ${rev}). The old window was closed, not overwritten.`;
  if (result.disposition === "observation") return `Kept as an observation only (${result.reason}): it is not a current value.`;
  if (result.disposition === "historical") return `Kept as historical (${result.reason}): it does not change the current value.`;
  return `Not recorded (${result.reason ?? result.disposition}).`;
}

let reviewing = null;

export function openReview(item, decision) {
  reviewing = { item, decision };
  $("review-title").textContent = `${decision === "accept" ? "Accept" : "Reject"} the batch of event ${item.event_id}?`;
  $("review-effect").textContent =
    decision === "accept"
      ? "Accepting commits its claims as if the order rule had applied them; authority, revocations and limits are still checked. You are recorded as who decided."
      : "Rejecting closes the item without committing anything. You are recorded as who decided.";
  $("review-confirm").textContent = decision === "accept" ? "Accept" : "Reject";
  $("review-reason").value = "";
  $("review-error").hidden = true;
  $("review-dialog").showModal();
  $("review-reason").focus();
}

async function submitReview(event) {
  event.preventDefault();
  const reason = $("review-reason").value.trim();
  const error = $("review-error");
  if (!reason) {
    error.textContent = "Say why: a reason is required and is recorded.";
    error.hidden = false;
    $("review-reason").focus();
    return;
  }
  const { item, decision } = reviewing;
  $("review-confirm").disabled = true;
  try {
    await call(`/v1/reviews/${encodeURIComponent(item.review_id)}/${decision}`, { method: "POST", body: { reason } });
    $("review-dialog").close();
    toast(decision === "accept" ? `Accepted the batch of ${item.event_id}.` : `Rejected the batch of ${item.event_id}; nothing was committed.`);
    hooks.refresh();
  } catch (failure) {
    error.textContent = failure.message;
    error.hidden = false;
  } finally {
    $("review-confirm").disabled = false;
  }
}

/** Wire the dialogs' forms and buttons (once, at start). */
export function bindDialogs() {
  $("revoke-form").addEventListener("submit", submitRevoke);
  $("revoke-cancel").addEventListener("click", () => $("revoke-dialog").close());
  $("correct-form").addEventListener("submit", submitCorrect);
  $("correct-cancel").addEventListener("click", () => $("correct-dialog").close());
  $("correct-family").addEventListener("change", () => {
    fillKinds($("correct-family").value);
    checkGrant();
  });
  $("correct-scope").addEventListener("input", checkGrant);
  $("review-form").addEventListener("submit", submitReview);
  $("review-cancel").addEventListener("click", () => $("review-dialog").close());
}
