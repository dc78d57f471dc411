// The timeline: nodes and LLM calls on a time axis, from the task's event log
// (GET /tasks/{id}/events?since=..., JSON pages). Rows are in the tree's order (a node, then
// its sub-tasks). A node's bar shows it waiting (created, nothing run yet), running (from its
// first to its last LLM call or executor step) and then, for a decomposed node, its sub-tasks
// at work until it got a final status; an LLM call's mark ends when it was recorded and is as
// long as its latency.

import { api } from "./api.js";
import { el, fmtSeconds, plural, put } from "./util.js";
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

// the nodes in the tree's order: each node, then its children by position (depth-first)
function treeOrder(nodes) {
  const kids = new Map();
  const roots = [];
  for (const r of nodes.values()) {
    const parent = r.node.parent_id;
    if (parent === null || parent === undefined || !nodes.has(parent)) roots.push(r);
    else kids.set(parent, [...(kids.get(parent) || []), r]);
  }
  const byPosition = (a, b) => (a.node.position - b.node.position) || (a.node.id - b.node.id);
  const out = [];
  const stack = roots.sort(byPosition).reverse().map((r) => [r, 0]);
  while (stack.length) {
    const [r, level] = stack.pop();
    out.push([r, level]);
    for (const k of (kids.get(r.node.id) || []).sort(byPosition).reverse()) stack.push([k, level + 1]);
  }
  return out;
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
  const work = new Map(); // node id -> [first, last] activity (LLM calls, steps)
  const worked = (id, start, end) => {
    const w = work.get(id);
    if (!w) work.set(id, [start, end]);
    else work.set(id, [Math.min(w[0], start), Math.max(w[1], end)]);
  };
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
      if (c.node_id !== null && c.node_id !== undefined) worked(c.node_id, t - (c.latency_s || 0), t);
    } else if (e.type === "step" && e.data.step) {
      worked(e.data.step.node_id, t, t);
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
  const ordered = treeOrder(nodes).slice(0, MAX_ROWS);
  for (const [r, level] of ordered) {
    const n = r.node;
    const end = r.end ?? tEnd;
    const w = work.get(n.id);
    const track = el("div", { class: "tl-track" });
    const segment = (cls, a, b, title) => track.append(el("span", {
      class: `tl-seg ${cls}`, style: `left:${pct(a)};width:${width(a, b)}`, title }));
    if (!w) {
      segment(n.kind === "group" ? "tl-sub" : "tl-wait", r.start, end,
        n.kind === "group" ? `group ${n.id}: its sub-tasks, ${fmtSeconds(end - r.start)}`
          : `node ${n.id}: waiting ${fmtSeconds(end - r.start)} (${n.status}; it ran no step or call)`);
    } else {
      const [first, last] = w;
      if (first > r.start) segment("tl-wait", r.start, first, `node ${n.id}: waiting ${fmtSeconds(first - r.start)}`);
      segment(`tl-run node-${n.status}`, first, Math.max(last, first), `node ${n.id}: running ${fmtSeconds(last - first)} (first to last LLM call or step)`);
      if (end > last) segment("tl-sub", last, end, `node ${n.id}: ${fmtSeconds(end - last)} after its own run (its sub-tasks, then its outcome)`);
    }
    for (const c of callsOf.get(n.id) || []) {
      track.append(el("span", { class: `tl-call role-${c.call.role}`,
        style: `left:${pct(c.start)};width:${width(c.start, c.end)}`,
        title: `${c.call.role} call ${c.call.id}: ${fmtSeconds(c.call.latency_s)}` }));
    }
    rows.append(el("div", { class: "tl-row", role: "listitem", dataset: { nodeId: n.id, status: n.status } },
      el("a", { class: "tl-label", href: `/ui/tasks/${encodeURIComponent(taskId)}?node=${n.id}`, "data-nav": "",
        style: `padding-left:${level * 0.8}rem`, title: n.goal },
        `${n.id} ${n.kind === "group" ? (n.logic || "").toUpperCase() : ""} ${n.goal}`),
      track,
      el("span", { class: "tl-dur muted", text: fmtSeconds(end - r.start) })));
  }
  const note = all.length > MAX_ROWS ? el("p", { class: "muted", text: `Showing the first ${MAX_ROWS} of ${all.length} nodes.` }) : null;
  const key = el("p", { class: "tl-key muted" },
    el("span", { class: "tl-seg-sample tl-wait" }), " waiting  ",
    el("span", { class: "tl-seg-sample tl-run node-succeeded" }), " running (first to last LLM call or step)  ",
    el("span", { class: "tl-seg-sample tl-sub" }), " its sub-tasks  ",
    el("span", { class: "tl-seg-sample tl-call-sample" }), " an LLM call");
  put(box,
    el("p", { class: "muted", text: `${plural(nodes.size, "node")} and ${plural(calls.length, "LLM call")} over ${fmtSeconds(span)}, in the tree's order.` }),
    key, note, rows);
}
