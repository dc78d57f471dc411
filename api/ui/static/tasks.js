// The tasks list, /ui: newest first, cursor pages, filters, live status (re-polled while open);
// tick two tasks to compare them.

import { api, curl } from "./api.js";
import { duration, el, put, fmtCost, fmtInt, fmtReward, fmtSeconds, go, link, statusBadge, tokens } from "./util.js";

// a model spec as the list shows it: the backend and model, without knobs or the endpoint
export function shortModel(spec) {
  const head = spec.split("?")[0].split("@http")[0];
  return head.startsWith("script:") ? "script" : head;
}
import { copyButton, problemBox } from "./widgets.js";

const STATUSES = ["queued", "running", "waiting", "succeeded", "failed", "cancelled", "budget_exceeded", "error"];
const POLL_MS = 2000;

function query(params) {
  const q = new URLSearchParams();
  for (const key of ["status", "environment", "strategy", "cursor"]) {
    if (params.get(key)) q.set(key, params.get(key));
  }
  return q;
}

// The list's URL for a page (`cursor` null: the first page), with the same filters.
function pageHref(q, cursor) {
  const n = new URLSearchParams(q);
  if (cursor) n.set("cursor", cursor);
  else n.delete("cursor");
  return `/ui${n.size ? "?" + n : ""}`;
}

// The API's cursors go one way (older); the page before one is remembered for the tab's
// session as it is seen, so "Newer" steps back through pages this tab went through. A page
// opened by its link alone has "Newest" only.
const NEWER = "adapt.newerPages";

function filtersKey(q) {
  const n = new URLSearchParams(q);
  n.delete("cursor");
  return n.toString();
}

function rememberNewer(q, nextCursor, cursor) {
  let map = {};
  try { map = JSON.parse(sessionStorage.getItem(NEWER) || "{}"); } catch { map = {}; }
  const key = `${filtersKey(q)}|${nextCursor}`;
  if (map[key] === (cursor || "")) return;
  map[key] = cursor || "";
  const keys = Object.keys(map);
  for (const k of keys.slice(0, Math.max(0, keys.length - 200))) delete map[k]; // bounded
  sessionStorage.setItem(NEWER, JSON.stringify(map));
}

function newerOf(q, cursor) {
  try {
    const map = JSON.parse(sessionStorage.getItem(NEWER) || "{}");
    return map[`${filtersKey(q)}|${cursor}`] ?? null;
  } catch {
    return null;
  }
}

export async function tasksPage(main, params, signal) {
  const q = query(params);
  const apiPath = () => {
    const p = new URLSearchParams(q);
    p.set("limit", "25");
    return `/tasks?${p}`;
  };
  const select = (name, options) => {
    const s = el("select", { id: `filter-${name}`, name });
    s.append(el("option", { value: "", text: "any" }));
    for (const o of options) s.append(el("option", { value: o, text: o, selected: params.get(name) === o }));
    return s;
  };
  let envs = [];
  let strategies = [];
  try {
    const info = await api("/environments", { signal });
    envs = info.items.map((e) => e.name);
    strategies = info.strategies;
  } catch { /* the list below shows the problem */ }
  const form = el("form", { class: "filters", role: "search", "aria-label": "Filter tasks" },
    el("label", {}, "status ", select("status", STATUSES)),
    el("label", {}, "environment ", select("environment", envs)),
    el("label", {}, "strategy ", select("strategy", strategies)));
  form.addEventListener("change", () => {
    const next = new URLSearchParams();
    for (const s of form.querySelectorAll("select")) if (s.value) next.set(s.name, s.value);
    go(`/ui${next.size ? "?" + next : ""}`);
  });
  const table = el("div", { class: "table-wrap" });
  const pager = el("nav", { class: "pager", "aria-label": "Pages" });
  const selected = []; // ids ticked for compare, in the order ticked (at most two)
  const compare = el("button", { type: "button", id: "compare-selected", disabled: true,
    text: "Compare 2 selected", onclick: () => go(`/ui/compare?a=${selected[0]}&b=${selected[1]}`) });
  const pickHelp = el("span", { class: "muted", id: "compare-help", text: "Tick two tasks to compare them." });
  const onTick = (id, on) => {
    const at = selected.indexOf(id);
    if (on && at < 0) selected.push(id);
    if (!on && at >= 0) selected.splice(at, 1);
    while (selected.length > 2) selected.shift(); // the oldest tick gives way
    for (const box of table.querySelectorAll("input.pick")) box.checked = selected.includes(box.value);
    compare.disabled = selected.length !== 2;
    pickHelp.textContent = selected.length === 2 ? `${selected[0].slice(0, 8)} and ${selected[1].slice(0, 8)}`
      : "Tick two tasks to compare them.";
  };
  main.replaceChildren(
    el("div", { class: "title-line" }, el("h1", { text: "Tasks" }), el("span", { class: "spacer" }),
      copyButton(() => curl(apiPath())), link("/ui/new", "New task", { class: "button primary" })),
    form, el("div", { class: "compare-pick" }, compare, pickHelp), table, pager);

  let timer = null;
  const load = async () => {
    let page;
    try {
      page = await api(apiPath(), { signal });
    } catch (error) {
      if (!signal.aborted) table.replaceChildren(problemBox(error));
      return;
    }
    if (signal.aborted) return;
    table.replaceChildren(render(page.items, selected, onTick));
    const cursor = q.get("cursor");
    if (page.next_cursor) rememberNewer(q, page.next_cursor, cursor);
    const newer = cursor ? newerOf(q, cursor) : null;
    put(pager,
      cursor ? link(pageHref(q, null), "⇤ Newest", { class: "button", id: "page-newest" }) : null,
      newer !== null && newer !== "" ? link(pageHref(q, newer), "← Newer", { class: "button", id: "page-newer" }) : null,
      page.next_cursor ? link(pageHref(q, page.next_cursor), "Older →", { class: "button", id: "page-older" }) : null);
    main.dataset.loaded = "true";
    timer = setTimeout(load, POLL_MS);
  };
  signal.addEventListener("abort", () => clearTimeout(timer));
  await load();
}

function render(items, selected, onTick) {
  if (!items.length) {
    return el("p", { class: "muted", text: "No tasks yet. " }, link("/ui/new", "Create one."));
  }
  const head = ["", "task", "status", "environment", "strategy", "d_max", "model", "goal", "success", "reward", "LLM calls", "tokens", "cost", "duration", "created"];
  const table = el("table", { class: "tasks" },
    el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", text: h })))));
  const body = el("tbody");
  for (const t of items) {
    const models = t.models.planner.model === t.models.executor.model ? t.models.executor.model
      : `${t.models.executor.model} / ${t.models.planner.model}`;
    body.append(el("tr", { dataset: { taskId: t.id, status: t.status } },
      el("td", {}, el("input", { type: "checkbox", class: "pick", value: t.id, checked: selected.includes(t.id),
        "aria-label": `compare task ${t.id.slice(0, 8)}`, onchange: (e) => onTick(t.id, e.target.checked) })),
      el("td", {}, link(`/ui/tasks/${t.id}`, t.id.slice(0, 8), { class: "mono", title: t.id })),
      el("td", {}, statusBadge(t.status)),
      el("td", { text: t.environment }),
      el("td", { text: t.strategy }),
      el("td", { class: "num", text: String(t.d_max) }),
      el("td", { class: "model-cell", title: models },
        shortModel(t.models.executor.model) + (t.models.planner.model !== t.models.executor.model ? ` / ${shortModel(t.models.planner.model)}` : ""),
        t.simulated ? " " : null, t.simulated ? el("span", { class: "sim-label", text: "SIMULATED",
          title: "a simulated or scripted model: no real LLM ran this task" }) : null),
      el("td", { class: "goal-cell", text: t.resolved_goal || t.goal || JSON.stringify(t.environment_config), title: t.resolved_goal || t.goal || "" }),
      el("td", { text: t.success === null ? "–" : t.success ? "✓" : "✗" }),
      el("td", { class: "num", text: fmtReward(t.reward) }),
      el("td", { class: "num", text: fmtInt(t.usage.llm_calls) }),
      el("td", { class: "num", text: fmtInt(tokens(t.usage)) }),
      el("td", { class: "num", text: fmtCost(t.usage.cost_usd) }),
      el("td", { class: "num", text: fmtSeconds(duration(t)) }),
      el("td", { class: "muted", text: new Date(t.created_at).toLocaleString() })));
  }
  table.append(body);
  return table;
}
