// Compare two tasks side by side, /ui/compare?a=ID&b=ID: their summaries, then their trees
// level by level (depth 1 beside depth 1, ...), so where the runs diverged lines up. A and B
// may be any unique prefix of a task id (the 8 characters the list shows will do); the list
// also picks two tasks to compare.

import { api, curl } from "./api.js";
import { duration, el, put, fmtCost, fmtInt, fmtReward, fmtSeconds, go, link, plural, statusBadge, tokens } from "./util.js";
import { copyButton, problemBox } from "./widgets.js";

function byDepth(tree) {
  const levels = new Map();
  const stack = tree ? [tree] : [];
  const order = [];
  while (stack.length) {
    const n = stack.pop();
    order.push(n);
    for (let i = n.children.length - 1; i >= 0; i -= 1) stack.push(n.children[i]);
  }
  for (const n of order) {
    const list = levels.get(n.depth) || [];
    list.push(n);
    levels.set(n.depth, list);
  }
  return levels;
}

function summaryRows(a, b) {
  const rows = [
    ["status", (t) => statusBadge(t.status)],
    ["environment", (t) => t.environment],
    ["strategy", (t) => t.strategy],
    ["profile", (t) => t.profile ?? "–"],
    ["d_max", (t) => String(t.d_max)],
    ["executor model", (t) => t.models.executor.model + (t.models.executor.simulated ? " (SIMULATED)" : "")],
    ["goal", (t) => t.resolved_goal || t.goal || "–"],
    ["success", (t) => (t.success === null ? "–" : t.success ? "yes" : "no")],
    ["reward", (t) => fmtReward(t.reward)],
    ["nodes", (t) => fmtInt(t.nodes_count)],
    ["max depth", (t) => String(t.max_depth)],
    ["LLM calls", (t) => fmtInt(t.usage.llm_calls)],
    ["tokens", (t) => fmtInt(tokens(t.usage))],
    ["cost", (t) => fmtCost(t.usage.cost_usd)],
    ["duration", (t) => fmtSeconds(duration(t))],
  ];
  return rows.map(([label, f]) => el("tr", {}, el("th", { scope: "row", text: label }),
    el("td", {}, f(a)), el("td", {}, f(b))));
}

function levelCell(taskId, nodes) {
  if (!nodes?.length) return el("td", { class: "muted", text: "–" });
  const ok = nodes.filter((n) => n.status === "succeeded").length;
  const failed = nodes.filter((n) => n.status === "failed").length;
  const calls = nodes.reduce((s, n) => s + (n.usage?.llm_calls || 0), 0);
  const list = el("ul", { class: "level-nodes" });
  for (const n of nodes.slice(0, 50)) {
    list.append(el("li", {}, statusBadge(n.status), " ",
      n.kind === "group" ? el("span", { class: `logic logic-${n.logic}`, text: (n.logic || "").toUpperCase() }) : null, " ",
      link(`/ui/tasks/${taskId}?node=${n.id}`, n.goal)));
  }
  if (nodes.length > 50) list.append(el("li", { class: "muted", text: `… ${nodes.length - 50} more` }));
  return el("td", {}, el("div", { class: "muted", text: `${plural(nodes.length, "node")} · ${fmtInt(ok)} succeeded · ${fmtInt(failed)} failed · ${plural(calls, "call")}` }), list);
}

// The task id a prefix names: GET /tasks?id_prefix=...; an Error saying what is wrong when
// none or several tasks match
export async function resolveId(prefix, signal) {
  const p = prefix.trim().toLowerCase();
  if (!/^[0-9a-f]{1,32}$/.test(p)) throw new Error(`"${prefix}" is not a task id (hex digits, as the list shows them)`);
  if (p.length === 32) return p;
  const page = await api(`/tasks?id_prefix=${p}&limit=3`, { signal });
  if (page.items.length === 1) return page.items[0].id;
  if (!page.items.length) throw new Error(`no task id starts with "${p}"`);
  throw new Error(`"${p}" matches more than one task (${page.items.map((t) => t.id.slice(0, 12)).join(", ")}…): give more characters`);
}

export async function comparePage(main, params, signal) {
  const a = params.get("a") || "";
  const b = params.get("b") || "";
  const inputA = el("input", { id: "compare-a", name: "a", value: a, placeholder: "task id or its first characters", list: "recent-tasks", spellcheck: "false" });
  const inputB = el("input", { id: "compare-b", name: "b", value: b, placeholder: "task id or its first characters", list: "recent-tasks", spellcheck: "false" });
  const recent = el("datalist", { id: "recent-tasks" });
  const form = el("form", { class: "compare-form" },
    el("label", { for: "compare-a", text: "A" }), inputA,
    el("label", { for: "compare-b", text: "B" }), inputB,
    el("button", { type: "submit", class: "primary", text: "Compare" }), recent);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    go(`/ui/compare?a=${encodeURIComponent(inputA.value.trim())}&b=${encodeURIComponent(inputB.value.trim())}`);
  });
  const out = el("div", { class: "compare-out" });
  main.replaceChildren(el("div", { class: "title-line" }, el("h1", { text: "Compare tasks" }), el("span", { class: "spacer" }),
    copyButton(() => [a, b].filter(Boolean).map((id) => curl(`/tasks/${id}/tree`)).join("\n"))), form, out);
  api("/tasks?limit=50", { signal }).then((page) => {
    for (const t of page.items) recent.append(el("option", { value: t.id.slice(0, 8), text: `${t.environment} · ${t.strategy} · d_max ${t.d_max} · ${t.status}` }));
  }).catch(() => {});
  if (!a || !b) {
    out.replaceChildren(el("p", { class: "muted" }, "Give two task ids (the first characters are enough), or tick two tasks in ",
      link("/ui", "the list"), ": e.g. the same game under adapt and react."));
    main.dataset.loaded = "true";
    return;
  }
  let data;
  try {
    const ids = await Promise.all([a, b].map((x) => resolveId(x, signal)));
    if (ids[0] !== a || ids[1] !== b) { // the full ids in the address, for a link that lasts
      history.replaceState(null, "", `/ui/compare?a=${ids[0]}&b=${ids[1]}`);
    }
    data = await Promise.all(ids.map(async (id) => {
      const [task, tree] = await Promise.all([api(`/tasks/${encodeURIComponent(id)}`, { signal }), api(`/tasks/${encodeURIComponent(id)}/tree`, { signal })]);
      return { task, levels: byDepth(tree.tree) };
    }));
  } catch (error) {
    out.replaceChildren(error.problem ? problemBox(error) : el("p", { class: "problem", role: "alert", text: error.message }));
    main.dataset.loaded = "true";
    return;
  }
  const [A, B] = data;
  const head = el("tr", {}, el("th", { scope: "col", text: "" }),
    el("th", { scope: "col" }, link(`/ui/tasks/${A.task.id}`, `A ${A.task.id.slice(0, 8)}`)),
    el("th", { scope: "col" }, link(`/ui/tasks/${B.task.id}`, `B ${B.task.id.slice(0, 8)}`)));
  const depth = Math.max(0, ...A.levels.keys(), ...B.levels.keys());
  const levelRows = [];
  for (let d = 1; d <= depth; d += 1) {
    levelRows.push(el("tr", { dataset: { depth: d } }, el("th", { scope: "row", text: `depth ${d}` }),
      levelCell(A.task.id, A.levels.get(d)), levelCell(B.task.id, B.levels.get(d))));
  }
  put(out,
    el("div", { class: "table-wrap" }, el("table", { class: "compare" }, el("thead", {}, head), el("tbody", {}, summaryRows(A.task, B.task)))),
    el("h2", { text: "Trees by depth" }),
    el("div", { class: "table-wrap" }, el("table", { class: "compare levels" }, el("thead", {}, head.cloneNode(true)), el("tbody", {}, levelRows))));
  main.dataset.loaded = "true";
}
