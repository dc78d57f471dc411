// Compare two tasks side by side, /ui/compare?a=ID&b=ID: their summaries, then their trees
// level by level (depth 1 beside depth 1, ...), so where the runs diverged lines up.

import { api, curl } from "./api.js";
import { duration, el, put, fmtCost, fmtInt, fmtReward, fmtSeconds, go, link, statusBadge, tokens } from "./util.js";
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
    ["executor model", (t) => t.models.executor.model],
    ["goal", (t) => t.resolved_goal || t.goal || "–"],
    ["success", (t) => (t.success === null ? "–" : t.success ? "yes" : "no")],
    ["reward", (t) => fmtReward(t.reward)],
    ["nodes", (t) => String(t.nodes_count)],
    ["max depth", (t) => String(t.max_depth)],
    ["LLM calls", (t) => String(t.usage.llm_calls)],
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
  return el("td", {}, el("div", { class: "muted", text: `${nodes.length} nodes · ${ok} succeeded · ${failed} failed · ${calls} calls` }), list);
}

export async function comparePage(main, params, signal) {
  const a = params.get("a") || "";
  const b = params.get("b") || "";
  const inputA = el("input", { id: "compare-a", name: "a", value: a, placeholder: "task id", list: "recent-tasks", spellcheck: "false" });
  const inputB = el("input", { id: "compare-b", name: "b", value: b, placeholder: "task id", list: "recent-tasks", spellcheck: "false" });
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
    for (const t of page.items) recent.append(el("option", { value: t.id, text: `${t.environment} · ${t.strategy} · ${t.status}` }));
  }).catch(() => {});
  if (!a || !b) {
    out.replaceChildren(el("p", { class: "muted", text: "Pick two tasks, e.g. the same game under adapt and react." }));
    main.dataset.loaded = "true";
    return;
  }
  let data;
  try {
    data = await Promise.all([a, b].map(async (id) => {
      const [task, tree] = await Promise.all([api(`/tasks/${encodeURIComponent(id)}`, { signal }), api(`/tasks/${encodeURIComponent(id)}/tree`, { signal })]);
      return { task, levels: byDepth(tree.tree) };
    }));
  } catch (error) {
    out.replaceChildren(problemBox(error));
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
