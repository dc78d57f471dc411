// What a waiting task asks a person (GET /tasks/{id}/approvals?status=pending), with approve,
// reject (a reason the model hears) and edit (a changed plan, action, or tool call's arguments as
// JSON, validated by the API: a refusal is shown inline, naming the field). POST /tasks/{id}/approvals/{approval_id}.

import { api } from "./api.js";
import { el, put } from "./util.js";
import { problemBox } from "./widgets.js";

function planEditor(proposal) {
  const steps = el("textarea", { class: "approval-steps", rows: Math.max(3, proposal.steps.length + 1),
    "aria-label": "Steps, one per line" });
  steps.value = proposal.steps.join("\n");
  const order = el("input", { type: "text", class: "approval-order", "aria-label": "Execution order",
    value: proposal.execution_order || "" });
  const read = () => ({ steps: steps.value.split("\n").map((s) => s.trim()).filter((s) => s),
    execution_order: order.value });
  return { nodes: [el("label", {}, "Steps (one per line)", steps),
    el("label", {}, "Execution order", order)], read };
}

function actionEditor(proposal) {
  const action = el("input", { type: "text", class: "approval-action", "aria-label": "Action",
    value: proposal.action || "" });
  return { nodes: [el("label", {}, "Action", action)], read: () => ({ action: action.value }) };
}

// a tool call: its arguments as JSON, checked by the API against the tool's input schema
function callEditor(proposal) {
  const text = JSON.stringify(proposal.arguments ?? {}, null, 2);
  const args = el("textarea", { class: "approval-arguments", rows: Math.min(16, text.split("\n").length + 1),
    "aria-label": "Arguments (JSON)" });
  args.value = text;
  const read = () => {
    let value;
    try {
      value = JSON.parse(args.value);
    } catch (error) {
      throw new Error(`the arguments are not JSON: ${error.message}`);
    }
    return { name: proposal.name, arguments: value };
  };
  return { nodes: [el("label", {}, `Arguments of ${proposal.name} (JSON)`, args)], read };
}

function editorFor(item) {
  if (item.kind === "plan") return planEditor(item.proposal);
  return item.proposal.arguments !== undefined ? callEditor(item.proposal) : actionEditor(item.proposal);
}

function card(taskId, item, { signal, onDecided }) {
  const path = `/tasks/${encodeURIComponent(taskId)}/approvals/${encodeURIComponent(item.id)}`;
  const editor = editorFor(item);
  const reason = el("input", { type: "text", class: "approval-reason", "aria-label": "Reason",
    placeholder: "reason (the model hears a rejection's)" });
  const problem = el("div", { class: "approval-problem" });
  const decide = async (decision, button) => {
    const body = { decision };
    if (reason.value.trim()) body.reason = reason.value.trim();
    if (decision === "edit") {
      try {
        body.proposal = editor.read();
      } catch (error) {
        problem.replaceChildren(problemBox(error));
        return;
      }
    }
    button.disabled = true;
    try {
      await api(path, { method: "POST", body, signal });
      problem.replaceChildren();
      onDecided && onDecided(item, decision);
    } catch (error) {
      problem.replaceChildren(problemBox(error));
    } finally {
      button.disabled = false;
    }
  };
  const button = (name, text, cls) => {
    const b = el("button", { type: "button", class: `approval-${name} ${cls}`, text });
    b.addEventListener("click", () => decide(name, b));
    return b;
  };
  const what = item.kind === "plan" ? "its plan" : `the action ${item.proposal.name || ""}`;
  return el("section", { class: "approval", "data-approval-id": item.id, "data-node-id": String(item.node_id) },
    el("h3", { text: `Node ${item.node_id} waits for approval of ${what}` }),
    ...editor.nodes, reason,
    el("div", { class: "approval-buttons" },
      button("approve", "Approve", ""), button("reject", "Reject", "danger"),
      button("edit", "Approve as edited", "")),
    problem);
}

// Fill ``box`` with the task's pending approvals (empty when nothing waits).
export async function renderApprovals(box, taskId, { signal, onDecided } = {}) {
  let page;
  try {
    page = await api(`/tasks/${encodeURIComponent(taskId)}/approvals?status=pending`, { signal });
  } catch (error) {
    if (!signal?.aborted) put(box, problemBox(error));
    return;
  }
  if (!page.items.length) {
    box.replaceChildren();
    box.hidden = true;
    return;
  }
  box.hidden = false;
  put(box, el("h2", { text: "Waiting for your decision" }),
    page.items.map((item) => card(taskId, item, { signal, onDecided })));
}
