// The decomposition tree: a model fed by GET /tasks/{id}/tree and the event stream, and a
// virtualised view (only the rows in sight exist in the DOM), so a 5,000-node tree paints at
// once and scrolls smoothly. Keyboard: Up/Down move, Left/Right collapse/expand (or go to the
// parent/first child), Home/End, Enter or Space opens the node's panel, * expands all.

import { CLAIM, ROLLUP, VERIFIED, reasonBadge, rewardTitle } from "./legend.js";
import { el, fmtCost, fmtInt, fmtReward, plural } from "./util.js";

const ROW_HEIGHT = 30;
const OVERSCAN = 12;
const FINAL = new Set(["succeeded", "failed", "skipped", "cancelled"]);

export class TreeModel {
  constructor() {
    this.nodes = new Map(); // id -> node (NodePublic fields, without children)
    this.children = new Map(); // id -> [child ids], ordered by position
    this.rootId = null;
    this.rollup = new Map(); // id -> {calls, tokens, cost, costKnown, size, reward}
    this.failing = new Set(); // ids on the failing path from the root
    this.version = 0;
  }

  load(tree) {
    this.nodes.clear();
    this.children.clear();
    this.rootId = null;
    if (tree) {
      const stack = [tree];
      while (stack.length) {
        const node = stack.pop();
        const { children, ...fields } = node;
        this.upsert(fields, false);
        for (const child of children || []) stack.push(child);
      }
    }
    this.recompute();
  }

  upsert(node, recompute = true) {
    const known = this.nodes.get(node.id);
    this.nodes.set(node.id, { ...(known || {}), ...node });
    if (!known) {
      if (node.parent_id === null || node.parent_id === undefined) {
        if (this.rootId === null || node.id < this.rootId) this.rootId = node.id;
      } else {
        const siblings = this.children.get(node.parent_id) || [];
        siblings.push(node.id);
        this.children.set(node.parent_id, siblings);
        siblings.sort((a, b) => this.order(a, b));
      }
    }
    if (recompute) this.recompute();
  }

  order(a, b) {
    const na = this.nodes.get(a);
    const nb = this.nodes.get(b);
    return (na.position - nb.position) || (a - b);
  }

  kids(id) {
    return this.children.get(id) || [];
  }

  // subtree LLM usage (each node's own usage summed over its subtree) and the failing path
  recompute() {
    this.version += 1;
    this.rollup.clear();
    this.failing.clear();
    if (this.rootId === null) return;
    const order = [];
    const stack = [this.rootId];
    while (stack.length) {
      const id = stack.pop();
      order.push(id);
      for (const child of this.kids(id)) stack.push(child);
    }
    for (let i = order.length - 1; i >= 0; i -= 1) {
      const id = order[i];
      const usage = this.nodes.get(id).usage || {};
      const own = this.nodes.get(id).reward;
      const sum = {
        calls: usage.llm_calls || 0,
        tokens: (usage.prompt_tokens || 0) + (usage.completion_tokens || 0),
        cost: usage.cost_usd || 0,
        costKnown: usage.cost_usd !== null && usage.cost_usd !== undefined,
        size: 1,
        reward: own === null || own === undefined ? null : own, // best reward in the subtree
      };
      for (const child of this.kids(id)) {
        const c = this.rollup.get(child);
        sum.calls += c.calls;
        sum.tokens += c.tokens;
        sum.cost += c.cost;
        sum.costKnown = sum.costKnown && c.costKnown;
        sum.size += c.size;
        if (c.reward !== null && (sum.reward === null || c.reward > sum.reward)) sum.reward = c.reward;
      }
      this.rollup.set(id, sum);
    }
    // failing path: failed nodes whose ancestors all failed, from the root down
    const walk = [this.rootId];
    while (walk.length) {
      const id = walk.pop();
      if (!isFailed(this.nodes.get(id))) continue;
      this.failing.add(id);
      for (const child of this.kids(id)) walk.push(child);
    }
  }
}

export function isFailed(node) {
  return node.status === "failed" || (FINAL.has(node.status) && node.success === false &&
    node.status !== "skipped" && node.status !== "cancelled");
}

// the environment's verdict (issue 17): "confirmed" / "refuted" / "unknown", or a boolean
// `verified`; undefined when the node carries none
export function verdictOf(node) {
  if (node.verified !== undefined && node.verified !== null) return node.verified;
  const v = node.verdict;
  if (v === undefined || v === null) return undefined;
  if (v === "confirmed") return true;
  if (v === "refuted") return false;
  if (typeof v === "object") return v.success ?? v.passed ?? null;
  return typeof v === "boolean" ? v : null; // unknown
}

export function claimOf(node) {
  if (node.claim !== undefined) return node.claim;
  return node.executor_success ?? node.self_assessed ?? null;
}

function mark(value, yes, no) {
  return value === true ? yes : value === false ? no : "?";
}

export class TreeView {
  constructor(model, { onOpen, onSelect } = {}) {
    this.model = model;
    this.onOpen = onOpen;
    this.onSelect = onSelect;
    this.collapsed = new Set();
    this.rows = []; // visible ids, in display order
    this.depthOf = new Map();
    this.active = null;
    this.pool = new Map(); // id -> row element in the DOM
    this.root = el("div", {
      class: "tree", role: "tree", tabindex: "0", "aria-label": "Decomposition tree",
      onkeydown: (e) => this.key(e), onscroll: () => this.paint(),
      onclick: (e) => this.click(e),
    });
    this.spacer = el("div", { class: "tree-spacer", role: "none" });
    this.root.append(this.spacer);
    this.resizeObserver = new ResizeObserver(() => this.paint());
    this.resizeObserver.observe(this.root);
  }

  // rebuild the visible row list and repaint (cheap: one pass over the expanded nodes)
  refresh() {
    const rows = [];
    const m = this.model;
    if (m.rootId !== null) {
      const stack = [[m.rootId, 1]];
      while (stack.length) {
        const [id, level] = stack.pop();
        rows.push(id);
        this.depthOf.set(id, level);
        if (this.collapsed.has(id)) continue;
        const kids = m.kids(id);
        for (let i = kids.length - 1; i >= 0; i -= 1) stack.push([kids[i], level + 1]);
      }
    }
    this.rows = rows;
    this.index = new Map(rows.map((id, i) => [id, i]));
    if (this.active === null && rows.length) this.setActive(rows[0], false);
    this.spacer.style.height = `${rows.length * ROW_HEIGHT}px`;
    for (const row of this.pool.values()) row.remove();
    this.pool.clear();
    this.paint();
  }

  paint() {
    const top = this.root.scrollTop;
    const height = this.root.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.rows.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    const wanted = new Set(this.rows.slice(first, last));
    for (const [id, row] of this.pool) {
      if (!wanted.has(id)) {
        row.remove();
        this.pool.delete(id);
      }
    }
    for (let i = first; i < last; i += 1) {
      const id = this.rows[i];
      if (!this.pool.has(id)) {
        const row = this.renderRow(id);
        row.style.transform = `translateY(${i * ROW_HEIGHT}px)`;
        this.pool.set(id, row);
        this.root.append(row);
      }
    }
  }

  renderRow(id) {
    const m = this.model;
    const node = m.nodes.get(id);
    const kids = m.kids(id);
    const level = this.depthOf.get(id) || 1;
    const sum = m.rollup.get(id) || { calls: 0, tokens: 0, cost: 0, costKnown: true, size: 1, reward: null };
    const classes = ["tree-row", `node-${node.status}`];
    if (m.failing.has(id)) classes.push("failing");
    if (id === this.active) classes.push("active");
    if (node.kind === "group") classes.push("group");
    if (node.logic) classes.push(`logic-parent-${node.logic}`);
    const expanded = kids.length ? !this.collapsed.has(id) : undefined;
    const row = el("div", {
      class: classes.join(" "), role: "treeitem", id: `node-row-${id}`,
      "aria-level": level, "aria-expanded": expanded === undefined ? undefined : String(expanded),
      "aria-selected": id === this.active ? "true" : "false",
      dataset: { nodeId: id, status: node.status },
      style: `padding-left: ${0.4 + (level - 1) * 1.1}rem`,
    });
    row.append(el("span", {
      class: "toggle", "aria-hidden": "true",
      text: kids.length ? (this.collapsed.has(id) ? "▸" : "▾") : "·",
    }));
    const parent = node.parent_id === null ? null : m.nodes.get(node.parent_id);
    if (parent?.logic) {
      row.append(el("span", { class: `join join-${parent.logic}`, text: parent.logic === "or" ? "∨" : "∧",
        title: parent.logic === "or" ? "OR branch: an alternative" : "AND branch: needed" }));
    }
    if (node.logic && (kids.length || node.kind === "group")) {
      const logic = node.logic.toUpperCase();
      row.append(el("span", { class: `logic logic-${node.logic}`, text: logic,
        title: logic === "AND" ? "all sub-tasks must succeed" : "one sub-task must succeed" }));
    }
    row.append(el("span", { class: `status status-${node.status}`, text: node.status }));
    row.append(el("span", { class: "depth", text: `d${node.depth}`,
      title: `depth ${node.depth}: 1 for the root, +1 per decomposition` }));
    row.append(el("span", { class: "goal", text: node.label ? `${node.label}: ${node.goal}` : node.goal,
      title: node.goal }));
    if (node.kind !== "group") {
      const claim = claimOf(node);
      const verdict = verdictOf(node);
      const outcome = el("span", { class: "outcome" });
      outcome.append(el("span", { class: `claim claim-${claim}`, title: CLAIM[claim ?? null],
        text: `claim ${mark(claim, "✓", "✗")}` }));
      if (verdict !== undefined) {
        outcome.append(el("span", { class: `verified verified-${verdict}`,
          title: VERIFIED[verdict ?? null], text: `verified ${mark(verdict, "✓", "✗")}` }));
      }
      // a decomposed node's reward is its subtree's best (its own executor run gave up)
      const decomposed = kids.length > 0;
      const reward = decomposed ? sum.reward : node.reward;
      if (reward !== null && reward !== undefined) {
        outcome.append(el("span", { class: "reward", title: rewardTitle(reward, decomposed),
          text: `r ${fmtReward(reward)}` }));
      }
      row.append(outcome);
    }
    const why = reasonBadge(node.reason);
    if (why) row.append(el("span", { class: "reason", text: why, title: node.reason }));
    row.append(el("span", {
      class: "rollup", title: ROLLUP,
      text: `${plural(sum.calls, "call")} · ${fmtInt(sum.tokens)} tok · ${sum.costKnown ? fmtCost(sum.cost) : "$?"}`,
    }));
    return row;
  }

  setActive(id, announce = true) {
    const previous = this.pool.get(this.active);
    if (previous) {
      previous.classList.remove("active");
      previous.setAttribute("aria-selected", "false");
    }
    this.active = id;
    const row = this.pool.get(id);
    if (row) {
      row.classList.add("active");
      row.setAttribute("aria-selected", "true");
    }
    this.root.setAttribute("aria-activedescendant", `node-row-${id}`);
    if (announce && this.onSelect) this.onSelect(id);
  }

  reveal(id) {
    // expand the ancestors of id and scroll it into view
    let node = this.model.nodes.get(id);
    let changed = false;
    while (node && node.parent_id !== null && node.parent_id !== undefined) {
      if (this.collapsed.delete(node.parent_id)) changed = true;
      node = this.model.nodes.get(node.parent_id);
    }
    if (changed) this.refresh();
    const i = this.index?.get(id);
    if (i === undefined) return;
    const top = i * ROW_HEIGHT;
    if (top < this.root.scrollTop) this.root.scrollTop = top;
    else if (top + ROW_HEIGHT > this.root.scrollTop + this.root.clientHeight) {
      this.root.scrollTop = top + ROW_HEIGHT - this.root.clientHeight;
    }
    this.paint();
    this.setActive(id, false);
  }

  toggle(id, open) {
    if (!this.model.kids(id).length) return;
    const isOpen = !this.collapsed.has(id);
    if (open === isOpen) return;
    if (isOpen) this.collapsed.add(id);
    else this.collapsed.delete(id);
    this.refresh();
  }

  click(event) {
    const row = event.target.closest(".tree-row");
    if (!row) return;
    const id = Number(row.dataset.nodeId);
    this.root.focus({ preventScroll: true });
    if (event.target.classList.contains("toggle")) {
      this.toggle(id);
      this.setActive(id, false);
      return;
    }
    this.setActive(id);
    if (this.onOpen) this.onOpen(id);
  }

  key(event) {
    if (!this.rows.length) return;
    const i = this.index.get(this.active) ?? 0;
    const id = this.rows[i];
    const node = this.model.nodes.get(id);
    const kids = this.model.kids(id);
    let target = null;
    switch (event.key) {
      case "ArrowDown": target = this.rows[Math.min(i + 1, this.rows.length - 1)]; break;
      case "ArrowUp": target = this.rows[Math.max(i - 1, 0)]; break;
      case "Home": target = this.rows[0]; break;
      case "End": target = this.rows[this.rows.length - 1]; break;
      case "PageDown": target = this.rows[Math.min(i + 15, this.rows.length - 1)]; break;
      case "PageUp": target = this.rows[Math.max(i - 15, 0)]; break;
      case "ArrowRight":
        if (kids.length && this.collapsed.has(id)) this.toggle(id, true);
        else if (kids.length) target = kids[0];
        break;
      case "ArrowLeft":
        if (kids.length && !this.collapsed.has(id)) this.toggle(id, false);
        else if (node.parent_id !== null && node.parent_id !== undefined) target = node.parent_id;
        break;
      case "*":
        this.collapsed.clear();
        this.refresh();
        break;
      case "Enter":
      case " ":
        if (this.onOpen) this.onOpen(id);
        break;
      default:
        return;
    }
    event.preventDefault();
    if (target !== null && target !== undefined) {
      this.reveal(target);
      this.setActive(target);
    }
  }
}
