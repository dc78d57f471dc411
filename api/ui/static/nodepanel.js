// The node detail panel: GET /tasks/{id}/nodes/{node_id}, shown beside the tree (over it in a
// narrow window). Deep link: /ui/tasks/{id}?node={node_id}. While the node runs the panel is
// re-read on its events; an update keeps what the reader did: the steps and calls already shown
// stay the same elements (an expanded prompt stays expanded), other expanded sections are
// re-opened, and the scroll position and focus are restored.

import { api, curl } from "./api.js";
import { FIELDS, TERMINATION } from "./legend.js";
import { claimOf } from "./tree.js";
import { el, go, put, fmtBool, fmtCost, fmtInt, fmtReward, fmtSeconds, plural, statusBadge } from "./util.js";
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

// each term's tooltip says what it means (legend.js)
function facts(pairs) {
  const dl = el("dl", { class: "facts" });
  for (const [k, v] of pairs) {
    dl.append(el("dt", { text: k, title: FIELDS[k] }), el("dd", {}, v));
  }
  return dl;
}

function terminationText(termination) {
  if (!termination) return "–";
  const words = TERMINATION[termination];
  return words ? `${termination}: ${words}` : termination;
}

// How the node's outcome was decided, in words, from the node and (for a decomposed node) the
// tree's view of its children.
function outcomeText(node, model) {
  if (node.status === "skipped" || node.status === "cancelled") return node.reason || node.status;
  if (node.status === "pending" || node.status === "running") return "not decided yet";
  const kids = model?.kids(node.id) ?? [];
  if (kids.length && node.kind === "task" && node.plan) {
    const children = kids.map((id) => model.nodes.get(id)).filter(Boolean);
    const ok = children.filter((n) => n.status === "succeeded").length;
    const logic = (node.logic || "and").toUpperCase();
    const plan = `its ${logic} plan: ${ok} of ${plural(children.length, "sub-task")} succeeded`;
    // with verification on, the environment's verdict on the goal has the last word
    if (node.verdict === "confirmed") return `${plan}; the environment confirmed its goal`;
    if (node.verdict === "refuted") return `${plan}; the environment refuted its goal`;
    return plan;
  }
  if (node.kind === "group") return `its ${(node.logic || "and").toUpperCase()} combination of sub-tasks`;
  if (node.termination === "verified") return "the environment confirmed its goal";
  if (node.termination === "reused") return "a replayed library solution; the environment confirmed its goal";
  return "its own executor run";
}

// Why a node has no plan (the engine's reason where it recorded one)
function notDecomposed(node, task) {
  if (node.reason) return `Not decomposed: ${node.reason.replace(/^not decomposed: /, "")}.`;
  if (node.kind === "group") return "A group of the plan: its children are the sub-tasks.";
  if (node.status === "pending" || node.status === "running") return "Not decomposed (yet): its executor is running.";
  if (node.status === "succeeded") {
    if (node.termination === "verified" && !node.steps_count) {
      return "Not decomposed: not needed, the environment confirmed its goal before any step.";
    }
    return node.termination === "verified"
      ? "Not decomposed: not needed, its executor reached the goal (the environment confirmed it)."
      : "Not decomposed: not needed, its executor succeeded.";
  }
  if (task && task.strategy !== "adapt") return `Not decomposed: the ${task.strategy} strategy does not decompose nodes.`;
  if (node.error) return `Not decomposed: ${node.error}.`;
  return "Not decomposed.";
}

// Where a reused node's solution came from: the library entry, and the task and node that
// learned it (a link to that node when the task is known)
function reusedFrom(reused) {
  const entry = `library entry ${reused.entry}`;
  const sim = reused.simulated ? " (found by a simulated model)" : "";
  if (reused.imported && !reused.task) return el("span", { text: `${entry}, imported${sim}` });
  if (!reused.task) return el("span", { text: `${entry}${sim}` });
  const href = `/ui/tasks/${encodeURIComponent(reused.task)}?node=${encodeURIComponent(reused.node)}`;
  return el("span", {}, `${entry}, learned at `,
    el("a", { href, class: "reused-origin", text: `task ${reused.task} · node ${reused.node}` }),
    `${reused.imported ? " (imported)" : ""}${sim}`);
}

// Where a node's plan came from when the library gave it (reuse.plans): taken as is (no
// planner call) or shown to the planner as an example
function planFrom(reused) {
  const how = reused.mode === "example" ? "shown to the planner as an example: " : "reused, no planner call: ";
  return el("span", {}, how, reusedFrom(reused));
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
    if (step.extra?.approval?.proposed) {
      // a person edited the call before it ran: the model's call is kept
      item.querySelector(".step-head").append(el("span", { class: "badge warn edited-step", text: "edited by a person" }));
      item.append(el("div", { class: "muted label", text: "the model's call" }),
        pre(callText(step.extra.approval.proposed), "proposed-call"));
    }
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

function renderPlan(plan, node, task) {
  if (!plan || (!plan.steps?.length && node.reason)) {
    return el("p", { class: "muted not-decomposed", text: notDecomposed(node, task) });
  }
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
      `${fmtInt(call.prompt_tokens)} + ${fmtInt(call.completion_tokens)} tok${call.usage_estimated ? " (est.)" : ""} · ` +
      `${fmtSeconds(call.latency_s)} · ${fmtCost(call.cost_usd)}` }),
    corrections ? el("span", { class: "badge warn", text: `monitor: ${corrections} correction(s)` }) : null));
  const message = (m) => [`[${m.role}${m.tool_call_id ? ` ${m.tool_call_id}` : ""}]`, m.content,
    ...(m.tool_calls || []).map(callText)].filter(Boolean).join("\n");
  const prompt = call.messages?.length
    ? call.messages.map(message).join("\n\n")
    : (call.prompt ?? "(prompt not stored)");
  box.append(details(`prompt (${fmtInt(prompt.length)} chars)`, pre(prompt, "prompt"), `prompt-${call.id}`));
  if (call.tools?.length) {
    box.append(details(`tools (${fmtInt(call.tools.length)})`, pre(JSON.stringify(call.tools, null, 2)),
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

// A value of a decision's `changes`, as text (a plan's steps one per line)
function changeText(value) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join("\n");
  return JSON.stringify(value, null, 1);
}

// The node's approval requests and the decisions on them (GET /tasks/{id}/approvals): who
// decided (the API key's id and tenant), when, what, why, and what changed.
function renderDecisions(items) {
  const list = el("ol", { class: "decisions" });
  for (const a of items) {
    const who = a.decided_by === "deadline" ? "the deadline"
      : a.decided_by ? `key ${a.decided_by}${a.decided_tenant ? ` (tenant ${a.decided_tenant})` : ""}`
        : a.decided_at ? `the open API${a.decided_tenant ? ` (tenant ${a.decided_tenant})` : ""}` : null;
    const what = a.kind === "plan" ? `plan #${a.number}` : `action ${a.proposal?.name ?? ""} #${a.number}`;
    const changes = a.status === "edited" && a.changes
      ? Object.entries(a.changes).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)) : [];
    list.append(el("li", { class: `decision decision-${a.status}`, dataset: { approvalId: a.id } },
      el("div", { class: "decision-head" },
        el("span", { class: "decision-what", text: what }), statusBadge(a.status),
        who ? el("span", { class: "decision-who", text: `by ${who}` }) : null,
        a.decided_at ? el("time", { class: "decision-when muted", datetime: a.decided_at,
          text: new Date(a.decided_at).toLocaleString() }) : null),
      a.status === "pending" ? el("p", { class: "muted", text: "Waits for a decision (above the tabs)." }) : null,
      a.reason ? el("p", { class: "decision-reason", text: `Reason: ${a.reason}` }) : null,
      changes.length ? el("dl", { class: "decision-changes" }, changes.flatMap(([field, c]) => [
        el("dt", { text: field }),
        el("dd", {}, pre(changeText(c?.before), "change-before"), el("span", { class: "muted", text: "→" }),
          pre(changeText(c?.after), "change-after"))])) : null));
  }
  return list;
}

// `update`: the panel already shows this node and is re-read for its new steps and calls
// `task`: the task (its strategy, d_max, reward); `model`: the tree (the node's children and
// its subtree's best reward)
// Fork the (finished) task at this node: POST /tasks/{id}/fork, then the compare view on the
// pair. The executor model may be changed on the way (empty: the same run again).
function forkBox(taskId, nodeId, signal) {
  const model = el("input", { type: "text", class: "fork-model", "aria-label": "Executor model for the fork",
    placeholder: "executor model (empty: the same)" });
  const problem = el("div", { class: "fork-problem" });
  const button = el("button", { type: "button", class: "fork", text: "Fork from this node" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    const overrides = model.value.trim() ? { executor: { model: model.value.trim() } } : {};
    try {
      const fork = await api(`/tasks/${encodeURIComponent(taskId)}/fork`, {
        method: "POST", body: { node_id: nodeId, overrides }, signal });
      go(`/ui/compare?a=${encodeURIComponent(taskId)}&b=${encodeURIComponent(fork.id)}`);
    } catch (error) {
      problem.replaceChildren(problemBox(error));
    } finally {
      button.disabled = false;
    }
  });
  return el("div", { class: "fork-box" }, button, model, problem);
}

export async function renderNodePanel(container, taskId, nodeId, { onClose, signal, update = false, task = null, model = null } = {}) {
  const path = `/tasks/${encodeURIComponent(taskId)}/nodes/${nodeId}`;
  const same = () => update && container.dataset.nodeId === String(nodeId);
  let node;
  // the task's approval requests, when it asks for any (a failure leaves the section out)
  const asks = task?.run_config?.approval;
  const approvals = asks && (asks.plans || asks.actions?.length)
    ? api(`/tasks/${encodeURIComponent(taskId)}/approvals`, { signal }).catch(() => null) : null;
  try {
    node = await api(path, { signal });
  } catch (error) {
    if (signal?.aborted || same()) return; // an update that failed keeps what is shown
    container.replaceChildren(problemBox(error));
    return;
  }
  const decided = ((await approvals)?.items ?? []).filter((a) => a.node_id === node.id);
  if (signal?.aborted) return;
  const kept = same() ? keep(container) : null;
  const head = kept?.head ?? el("header", { class: "panel-head" },
    el("h2", { id: "panel-title", text: `Node ${node.id}` }),
    copyButton(() => curl(path)),
    el("button", { class: "close", type: "button", "aria-label": "Close node panel",
      text: "✕", onclick: () => onClose && onClose() }));
  const verdict = verdictText(node);
  const best = model?.rollup.get(node.id)?.reward ?? node.reward;
  const isRoot = node.parent_id === null || node.parent_id === undefined;
  const reached = fmtReward(best) + (isRoot && task && task.finished ? ` (the task's reward: ${fmtReward(task.reward)})` : "");
  const parts = [
    head,
    el("p", { class: "node-goal", text: node.goal }),
    el("h3", { class: "facts-title", text: "Outcome" }),
    facts([
      ["status", statusBadge(node.status)],
      ["success", fmtBool(node.success)],
      ["outcome", outcomeText(node, model)],
      ["reward reached", reached],
      ...(node.reason ? [["why", node.reason]] : []),
      ...(node.reused ? [["reused from", reusedFrom(node.reused)]] : []),
      ...(node.plan?.reused ? [["plan from", planFrom(node.plan.reused)]] : []),
      ["kind", node.kind === "group" ? `${node.kind} (${(node.logic || "").toUpperCase()})` : node.kind],
      ["depth", task ? `${node.depth} of d_max ${task.d_max}` : String(node.depth)],
    ]),
    node.kind === "group" ? null : el("h3", { class: "facts-title", text: "This node's executor run" }),
    node.kind === "group" ? null : facts([
      ["claim", fmtBool(claimOf(node))],
      ...(verdict !== null ? [["verified", verdict]] : []),
      ...(node.evidence ? [["evidence", node.evidence]] : []),
      ["executor reward", fmtReward(node.reward)],
      ["termination", terminationText(node.termination)],
      ["LLM calls", fmtInt(node.usage?.llm_calls ?? 0)],
      ["tokens", `${fmtInt(node.usage?.prompt_tokens ?? 0)} + ${fmtInt(node.usage?.completion_tokens ?? 0)}`],
      ["cost", fmtCost(node.usage?.cost_usd)],
      ...(node.error ? [["error", node.error]] : []),
    ]),
    decided.length ? section(`Approvals (${fmtInt(decided.length)})`, renderDecisions(decided)) : null,
    section(`Trajectory (${plural(node.steps.length, "step")})`, renderSteps(node.steps, kept)),
    section("Plan", renderPlan(node.plan, node, task)),
    section(`LLM calls (${fmtInt(node.llm_calls.length)})`,
      node.llm_calls.length ? el("div", {}, node.llm_calls.map((c) => renderCall(c, kept)))
        : el("p", { class: "muted", text: "No LLM calls at this node." })),
    section("Context",
      el("h4", { text: "in" }), pre(node.context_in ?? "(none)"),
      el("h4", { text: "out" }), pre(node.context_out ?? "(none)")),
  ];
  if (task && task.finished && !kept) parts.splice(2, 0, forkBox(taskId, node.id, signal));
  put(container, parts);
  if (kept) restore(container, kept);
  container.dataset.nodeId = String(node.id);
  container.dataset.status = node.status;
}
