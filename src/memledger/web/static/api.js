// The HTTP API of the same origin, with the person's API key.

const KEY_STORE = "memledger.key";
const CONSISTENCY = "Memledger-Consistency";

/** A failed request: ``message`` is the problem's ``detail``, shown to the person. */
export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code ?? null;
  }
}

export const session = {
  get key() {
    return sessionStorage.getItem(KEY_STORE);
  },
  set key(value) {
    if (value) sessionStorage.setItem(KEY_STORE, value);
    else sessionStorage.removeItem(KEY_STORE);
  },
};

// Revision floors of this tab's writes ("subject/family" -> revision): sent with reads,
// so that a read after a write never answers from before it.
const floors = new Map();

function remember(header) {
  if (!header) return;
  for (const part of header.split(",")) {
    const at = part.lastIndexOf("@");
    if (at < 1) continue;
    const slot = part.slice(0, at).trim();
    const revision = Number(part.slice(at + 1));
    if (Number.isSafeInteger(revision)) floors.set(slot, Math.max(floors.get(slot) ?? 0, revision));
  }
}

function token() {
  return [...floors].map(([slot, revision]) => `${slot}@${revision}`).join(",");
}

export function forget() {
  floors.clear();
}

function describe(status, body, fallback) {
  // a problem's detail names each of its faults (the first ten, with the count)
  if (body && typeof body.detail === "string" && body.detail) return body.detail;
  return `The server answered ${status} ${fallback}`.trim();
}

/**
 * Call the API. ``key`` defaults to the session's. Answers the parsed JSON body;
 * throws ApiError with the problem's detail on any failure.
 */
export async function api(path, { method = "GET", body, key, query } = {}) {
  const headers = { Accept: "application/json" };
  const using = key ?? session.key;
  if (using) headers.Authorization = `Bearer ${using}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const floor = token();
  if (floor) headers[CONSISTENCY] = floor;
  let url = path;
  if (query) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
    }
    const text = params.toString();
    if (text) url += `?${text}`;
  }
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    throw new ApiError(0, `The server could not be reached (${error.message}).`, "network");
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    throw new ApiError(response.status, describe(response.status, data, response.statusText), data?.code);
  }
  if (method !== "GET") remember(response.headers.get(CONSISTENCY));
  return data;
}

/** ``/v1/subjects/<subject>/...`` with the subject escaped. */
export function subjectPath(subject, ...rest) {
  return ["/v1/subjects", encodeURIComponent(subject), ...rest.map(encodeURIComponent)].join("/");
}
