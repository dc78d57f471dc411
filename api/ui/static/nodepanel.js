// The node detail panel: GET /tasks/{id}/nodes/{node_id}, shown beside the tree (over it in a
// narrow window). Deep link: /ui/tasks/{id}?node={node_id}. While the node runs the panel is
// re-read on its events; an update keeps what the reader did: the steps and calls already shown
// stay the same elements (an expanded prompt stays expanded), other expanded sections are
// re-opened, and the scroll position and focus are restored.

import { api, curl } from "./api.js";
import { claimOf } from "./tree.js";
import { el, put, fmtBool, fmtCost, fmtReward, fmtSeconds, statusBadge } from "./util.js";
import { copyButton, problemBox } from "./widgets.js";

function section(title, ...content) {
  return el("section", { class: "panel-section" }, el("h3", { text: title }), ...content);
}

function pre(text, cls = "") {
  return el("pre", { class: `text ${cls}`, text: text ?? "" });
}

// `key` names a section across updates (its open state is restored)
function details(summary, body, key) {
  return el("details", { dataset: key ? { key } : undefined }, el("summary", { text: summary }), body);
}

function facts(pairs) {
  const dl = el("dl", { class: "facts" });
  for (const [k, v] of pairs) dl.append(el("dt", { text: k }), el("dd", {}, v));
  return dl;
}

function verdictText(node) {
  if (node.verified !== undefined && node.verified !== null) return fmtBool(node.verified);
  if (node.verdict !== undefined && node.verdict !== null) {
    return typeof node.verdict === "object" ? JSON.stringify(node.verdict) : String(node.verdict);
  }
  return null;
}

// a tool call (the tools executor's): `name(arguments)`, the arguments as the model wrote them
function callText(call) {
  const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
  return `${call.name}(${args ?? ""})`;
}

function renderSteps(steps, kept) {
  if (!steps.length) return el("p", { class: "muted", text: "No executor steps." });
  const list = el("ol", { class: "steps" });
  for (const step of steps) {
    const sig = JSON.stringify(step);
    const old = kept?.steps.get(sig);
    if (old) {
      list.append(old);
      continue;
    }
    const item = el("li", { class: `step step-${step.kind}`, dataset: { sig } });
    item.append(el("div", { class: "step-head" },
      el("span", { class: `step-kind kind-${step.kind}`, text: step.kind }),
      el("span", { class: "muted", text: `#${step.index}` }),
      step.reward ? el("span", { class: "reward", text: `reward ${fmtReward(step.reward)}` }) : null,
      step.done ? el("span", { class: "badge", text: "done" }) : null,
      step.error ? el("span", { class: "status status-failed", text: "error" }) : null,
      step.extra?.tool ? el("span", { class: "badge", text: `tool ${step.extra.tool.name}` }) : null));
    if (step.extra?.tool) item.append(pre(callText(step.extra.tool), "tool-call"));
    item.append(pre(step.text || step.raw, "step-text"));
    if (step.kind === "action" || step.observation) {
      item.append(el("div", { class: "observation-label muted", text: "observation" }),
        pre(step.observation, "observation"));
    }
    if (step.error) item.append(pre(step.error, "error-text"));
    list.append(item);
  }
  return list;
}

function renderExpr(expr, steps) {
  if (!expr) return null;
  if (expr.kind === "step") {
    return el("li", { class: "expr-step" }, el("strong", { text: `Step ${expr.index}` }),
      steps[expr.index - 1] ? `: ${steps[expr.index - 1]}` : "");
  }
  const op = expr.op || "and";
  return el("li", { class: "expr-op" },
    el("span", { class: `logic logic-${op}`, text: op.toUpperCase() }),
    el("ul", { class: "expr" }, expr.children.map((c) => renderExpr(c, steps))));
}

function renderPlan(plan) {
  if (!plan) return el("p", { class: "muted", text: "Not decomposed." });
  const steps = plan.steps || [];
  return el("div", {},
    el("h4", { text: "parsed" }),
    plan.expression_text ? facts([["execution order", el("code", { text: plan.expression_text })]]) : null,
    plan.expression ? el("ul", { class: "expr" }, renderExpr(plan.expression, steps))
      : el("ol", { class: "plan-steps" }, steps.map((step) => el("li", { text: step }))),
    plan.warnings?.length ? el("ul", { class: "plan-warnings" },
      plan.warnings.map((w) => el("li", { class: "badge warn", text: w }))) : null,
    details("raw planner output", pre(plan.raw ?? ""), "plan-raw"));
}

function renderCall(call, kept) {
  const old = kept?.calls.get(String(call.id)); // a recorded call does not change
  if (old) return old;
  const monitor = call.monitor;
  const corrections = monitor ? (monitor.corrections ?? monitor.violations ?? 0) : 0;
  const box = el("article", { class: "call", dataset: { callId: call.id } });
  box.append(el("div", { class: "call-head" },
    el("span", { class: `role role-${call.role}`, text: call.role }),
    el("span", { class: "model", text: call.model + (call.simulated ? " (simulated)" : "") }),
    el("span", { class: "muted", text:
      `${call.prompt_tokens}+${call.completion_tokens} tok${call.usage_estimated ? " (est.)" : ""} · ` +
      `${fmtSeconds(call.latency_s)} · ${fmtCost(call.cost_usd)}` }),
    corrections ? el("span", { class: "badge warn", text: `monitor: ${corrections} correction(s)` }) : null));
  const message = (m) => [`[${m.role}${m.tool_call_id ? ` ${m.tool_call_id}` : ""}]`, m.content,
    ...(m.tool_calls || []).map(callText)].filter(Boolean).join("\n");
  const prompt = call.messages?.length
    ? call.messages.map(message).join("\n\n")
    : (call.prompt ?? "(prompt not stored)");
  box.append(details(`prompt (${prompt.length} chars)`, pre(prompt, "prompt"), `prompt-${call.id}`));
  if (call.tools?.length) {
    box.append(details(`tools (${call.tools.length})`, pre(JSON.stringify(call.tools, null, 2)),
      `tools-${call.id}`));
  }
  box.append(el("div", { class: "muted label", text: "completion" }), pre(call.completion, "completion"));
  if (call.tool_calls?.length) {
    box.append(el("div", { class: "muted label", text: "tool calls" }),
      pre(call.tool_calls.map((c) => `${callText(c)}  [${c.id}]`).join("\n"), "tool-calls"));
  }
  if (monitor) box.append(details("decoding monitor", pre(JSON.stringify(monitor, null, 2)), `monitor-${call.id}`));
  return box;
}

// What an update keeps of the panel on show: its elements that do not change, the open state
// of its sections, its scroll position and the focused element.
function keep(container) {
  const active = container.contains(document.activeElement) ? document.activeElement : null;
  return {
    head: container.querySelector(".panel-head"),
    calls: new Map([...container.querySelectorAll("article.call")].map((c) => [c.dataset.callId, c])),
    steps: new Map([...container.querySelectorAll("li.step")].map((s) => [s.dataset.sig, s])),
    open: new Map([...container.querySelectorAll("details[data-key]")].map((d) => [d.dataset.key, d.open])),
    focusKey: active?.closest("details[data-key]")?.dataset.key ?? null,
    active,
    scrollTop: container.scrollTop,
  };
}

function restore(container, kept) {
  for (const d of container.querySelectorAll("details[data-key]")) {
    if (kept.open.has(d.dataset.key)) d.open = kept.open.get(d.dataset.key);
  }
  container.scrollTop = kept.scrollTop;
  if (kept.active?.isConnected) kept.active.focus({ preventScroll: true });
  else if (kept.focusKey) {
    container.querySelector(`details[data-key="${CSS.escape(kept.focusKey)}"] > summary`)?.focus({ preventScroll: true });
  }
}

// `update`: the panel already shows this node and is re-read for its new steps and calls
export async function renderNodePanel(container, taskId, nodeId, { onClose, signal, update = false } = {}) {
  const path = `/tasks/${encodeURIComponent(taskId)}/nodes/${nodeId}`;
  const same = () => update && container.dataset.nodeId === String(nodeId);
  let node;
  try {
    node = await api(path, { signal });
  } catch (error) {
    if (signal?.aborted || same()) return; // an update that failed keeps what is shown
    container.replaceChildren(problemBox(error));
    return;
  }
  if (signal?.aborted) return;
  const kept = same() ? keep(container) : null;
  const head = kept?.head ?? el("header", { class: "panel-head" },
    el("h2", { id: "panel-title", text: `Node ${node.id}` }),
    copyButton(() => curl(path)),
    el("button", { class: "close", type: "button", "aria-label": "Close node panel",
      text: "✕", onclick: () => onClose && onClose() }));
  const verdict = verdictText(node);
  const parts = [
    head,
    el("p", { class: "node-goal", text: node.goal }),
    facts([
      ["status", statusBadge(node.status)],
      ["kind", node.kind === "group" ? `${node.kind} (${(node.logic || "").toUpperCase()})` : node.kind],
      ["depth", String(node.depth)],
      ["executor claim", fmtBool(claimOf(node))],
      ...(verdict !== null ? [["verified", verdict]] : []),
      ...(node.evidence ? [["evidence", node.evidence]] : []),
      ["success", fmtBool(node.success)],
      ["reward", fmtReward(node.reward)],
      ["termination", node.termination ?? "–"],
      ["LLM calls", String(node.usage?.llm_calls ?? 0)],
      ["tokens", `${node.usage?.prompt_tokens ?? 0} + ${node.usage?.completion_tokens ?? 0}`],
      ["cost", fmtCost(node.usage?.cost_usd)],
      ...(node.error ? [["error", node.error]] : []),
    ]),
    section(`Trajectory (${node.steps.length} step${node.steps.length === 1 ? "" : "s"})`, renderSteps(node.steps, kept)),
    section("Plan", renderPlan(node.plan)),
    section(`LLM calls (${node.llm_calls.length})`,
      node.llm_calls.length ? el("div", {}, node.llm_calls.map((c) => renderCall(c, kept)))
        : el("p", { class: "muted", text: "No LLM calls at this node." })),
    section("Context",
      el("h4", { text: "in" }), pre(node.context_in ?? "(none)"),
      el("h4", { text: "out" }), pre(node.context_out ?? "(none)")),
  ];
  put(container, parts);
  if (kept) restore(container, kept);
  container.dataset.nodeId = String(node.id);
  container.dataset.status = node.status;
}
