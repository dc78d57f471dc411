// The public HTTP API, as the pages use it: one place that adds the API key, turns problem
// details (RFC 9457) into errors, builds the equivalent curl command, and streams events.

const KEY = "adapt.apiKey";

export function apiKey() {
  return sessionStorage.getItem(KEY);
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
  window.dispatchEvent(new Event("adapt:key"));
}

function headers(extra = {}) {
  const h = { Accept: "application/json", ...extra };
  const key = apiKey();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

async function problemOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!body || typeof body !== "object") {
    body = { title: response.statusText || "Error", status: response.status, detail: "" };
  }
  return new ApiError(response.status, body);
}

export async function api(path, { method = "GET", body, signal, extraHeaders } = {}) {
  const init = { method, headers: headers(extraHeaders), signal, cache: "no-store" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  if (!response.ok) {
    const error = await problemOf(response);
    if (response.status === 401) window.dispatchEvent(new CustomEvent("adapt:unauthorized"));
    throw error;
  }
  if (response.status === 204) return null;
  return response.json();
}

function shellQuote(text) {
  return "'" + String(text).replaceAll("'", "'\\''") + "'";
}

// The curl command for a request; the key is never copied: it reads $ADAPT_API_KEY.
export function curl(path, { method = "GET", body, stream = false } = {}) {
  const parts = ["curl -s"];
  if (stream) parts.push("-N");
  if (method !== "GET") parts.push("-X " + method);
  if (apiKey()) parts.push(`-H "Authorization: Bearer $ADAPT_API_KEY"`);
  if (body !== undefined) {
    parts.push("-H 'content-type: application/json'");
    parts.push("-d " + shellQuote(JSON.stringify(body)));
  }
  parts.push(shellQuote(new URL(path, location.origin).href));
  return parts.join(" ");
}

function parseBlock(block) {
  const event = { id: null, event: "message", data: [] };
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "id") event.id = value;
    else if (name === "event") event.event = value;
    else if (name === "data") event.data.push(value);
  }
  return event.data.length ? { ...event, data: event.data.join("\n") } : null;
}

// Follow /tasks/{id}/events as Server-Sent Events over fetch(), so the API key travels in the
// Authorization header (EventSource cannot send headers, and a key in a URL leaks into logs).
// After a dropped connection it reconnects with Last-Event-ID: no event is lost or repeated.
// Calls onEvent({seq, type, created_at, data}) in seq order; resolves when the task finished.
export async function followEvents(taskId, afterSeq, onEvent, { signal, onState } = {}) {
  let last = afterSeq;
  let delay = 250;
  const state = (s) => onState && onState(s);
  while (!signal?.aborted) {
    let finished = false;
    try {
      const response = await fetch(`/tasks/${encodeURIComponent(taskId)}/events`, {
        headers: headers({ Accept: "text/event-stream", "Last-Event-ID": String(last) }),
        signal,
        cache: "no-store",
      });
      if (!response.ok) {
        const error = await problemOf(response);
        if (response.status === 401) window.dispatchEvent(new CustomEvent("adapt:unauthorized"));
        if (response.status < 500) throw error; // 4xx: retrying will not help
        throw new Error(error.message);
      }
      state("live");
      delay = 250;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replaceAll("\r\n", "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const message = parseBlock(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
          if (!message || message.id === null) continue;
          const seq = Number(message.id);
          if (!(seq > last)) continue; // already applied
          const payload = JSON.parse(message.data);
          last = seq;
          onEvent(payload);
          if (payload.type === "task.finished") finished = true;
        }
      }
      if (finished) break;
      // the server ends the stream at once when the task finished and we have everything
      const task = await api(`/tasks/${encodeURIComponent(taskId)}`, { signal });
      if (task.finished && last >= task.last_seq) break;
    } catch (error) {
      if (signal?.aborted) return last;
      if (error instanceof ApiError) {
        state("error");
        throw error;
      }
    }
    if (finished) break;
    state("reconnecting");
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 5000);
  }
  state("finished");
  return last;
}
