// The timeline: nodes and LLM calls on a time axis, from the task's event log
// (GET /tasks/{id}/events?since=..., JSON pages). A node's bar runs from its node.created event
// to the node.updated event that gave it a final status; an LLM call's bar ends when it was
// recorded and is as long as its latency.

import { api } from "./api.js";
import { el, fmtSeconds, put } from "./util.js";
import { problemBox } from "./widgets.js";

const FINAL = new Set(["succeeded", "failed", "skipped", "cancelled"]);
const MAX_ROWS = 1500;

export async function loadEvents(taskId, signal) {
  const events = [];
  let since = 0;
  for (;;) {
    const page = await api(`/tasks/${encodeURIComponent(taskId)}/events?since=${since}&limit=1000`, { signal });
    events.push(...page.events);
    if (!page.events.length || page.finished || page.events.length < 1000) break;
    since = page.last_seq;
  }
  return events;
}

export async function renderTimeline(box, taskId, { signal } = {}) {
  let events;
  try {
    events = await loadEvents(taskId, signal);
  } catch (error) {
    box.replaceChildren(problemBox(error));
    return;
  }
  const nodes = new Map();
  const calls = [];
  for (const e of events) {
    const t = Date.parse(e.created_at) / 1000;
    if (e.type === "node.created" || e.type === "node.updated") {
      const n = e.data.node;
      const row = nodes.get(n.id) || { node: n, start: t, end: null };
      row.node = { ...row.node, ...n };
      if (FINAL.has(n.status) && row.end === null) row.end = t;
      nodes.set(n.id, row);
    } else if (e.type === "llm_call") {
      const c = e.data.call;
      calls.push({ call: c, start: t - (c.latency_s || 0), end: t });
    }
  }
  if (!nodes.size) {
    box.replaceChildren(el("p", { class: "muted", text: "No events yet." }));
    return;
  }
  const all = [...nodes.values()];
  const t0 = Math.min(...all.map((r) => r.start), ...calls.map((c) => c.start));
  const tEnd = Math.max(...all.map((r) => r.end ?? r.start), ...calls.map((c) => c.end),
    Date.parse(events[events.length - 1].created_at) / 1000);
  const span = Math.max(tEnd - t0, 0.001);
  const pct = (t) => `${(((t - t0) / span) * 100).toFixed(3)}%`;
  const width = (a, b) => `${Math.max(((b - a) / span) * 100, 0.3).toFixed(3)}%`;
  const callsOf = new Map();
  for (const c of calls) {
    const list = callsOf.get(c.call.node_id) || [];
    list.push(c);
    callsOf.set(c.call.node_id, list);
  }
  const rows = el("div", { class: "timeline", role: "list", "aria-label": "Timeline" });
  rows.append(el("div", { class: "tl-axis", "aria-hidden": "true" },
    el("span", { text: "0 s" }), el("span", { text: fmtSeconds(span / 2) }), el("span", { text: fmtSeconds(span) })));
  const ordered = all.sort((a, b) => a.start - b.start || a.node.id - b.node.id).slice(0, MAX_ROWS);
  for (const r of ordered) {
    const n = r.node;
    const end = r.end ?? tEnd;
    const track = el("div", { class: "tl-track" },
      el("span", { class: `tl-bar node-${n.status}`, style: `left:${pct(r.start)};width:${width(r.start, end)}`,
        title: `node ${n.id}: ${fmtSeconds(end - r.start)}` }));
    for (const c of callsOf.get(n.id) || []) {
      track.append(el("span", { class: `tl-call role-${c.call.role}`,
        style: `left:${pct(c.start)};width:${width(c.start, c.end)}`,
        title: `${c.call.role} call ${c.call.id}: ${fmtSeconds(c.call.latency_s)}` }));
    }
    rows.append(el("div", { class: "tl-row", role: "listitem", dataset: { nodeId: n.id } },
      el("a", { class: "tl-label", href: `/ui/tasks/${encodeURIComponent(taskId)}?node=${n.id}`, "data-nav": "",
        style: `padding-left:${(n.depth - 1) * 0.6}rem`, title: n.goal },
        `${n.id} ${n.kind === "group" ? (n.logic || "").toUpperCase() : ""} ${n.goal}`),
      track,
      el("span", { class: "tl-dur muted", text: fmtSeconds(end - r.start) })));
  }
  const note = all.length > MAX_ROWS ? el("p", { class: "muted", text: `Showing the first ${MAX_ROWS} of ${all.length} nodes.` }) : null;
  put(box,
    el("p", { class: "muted", text: `${nodes.size} nodes and ${calls.length} LLM calls over ${fmtSeconds(span)}. Bars: node lifetime; dark marks: LLM calls (executor, planner, …).` }),
    note, rows);
}
