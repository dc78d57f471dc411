// The task page, /ui/tasks/{id}: summary, cancel, the live tree (GET /tasks/{id}/tree, then the
// event stream from its last_seq), the node panel (?node=N) and the timeline (?view=timeline).

import { api, curl, followEvents } from "./api.js";
import { renderApprovals } from "./approvals.js";
import { legendBox } from "./legend.js";
import { renderNodePanel } from "./nodepanel.js";
import { renderTimeline } from "./timeline.js";
import { TreeModel, TreeView } from "./tree.js";
import { duration, el, put, fmtCost, fmtInt, fmtReward, fmtSeconds, go, link, statusBadge, tokens } from "./util.js";
import { copyButton, problemBox } from "./widgets.js";

function summary(task) {
  const pairs = [
    ["environment", task.environment],
    ["strategy", task.strategy],
    ...(task.profile ? [["profile", task.profile]] : []),
    ["d_max", String(task.d_max)],
    ["success", task.success === null ? "–" : task.success ? "yes" : "no"],
    ["reward", fmtReward(task.reward)],
    ["nodes", fmtInt(task.nodes_count)],
    ["LLM calls", fmtInt(task.usage.llm_calls)],
    ["tokens", fmtInt(tokens(task.usage))],
    ["cost", fmtCost(task.usage.cost_usd)],
    ["duration", fmtSeconds(duration(task))],
    ["models", task.models.executor.model + (task.models.planner.model !== task.models.executor.model ? ` / ${task.models.planner.model}` : "")
      + (task.simulated ? " (SIMULATED)" : "")],
    ...(task.worker ? [["worker", task.worker]] : []),
  ];
  const dl = el("dl", { class: "summary" });
  for (const [k, v] of pairs) dl.append(el("div", {}, el("dt", { text: k }), el("dd", { text: v })));
  if (task.forked_from) {
    const origin = task.forked_from.task_id;
    dl.append(el("div", { class: "forked-from" }, el("dt", { text: "forked from" }),
      el("dd", {}, link(`/ui/tasks/${encodeURIComponent(origin)}?node=${task.forked_from.node_id}`,
        `${origin.slice(0, 8)} node ${task.forked_from.node_id}`), " · ",
      link(`/ui/compare?a=${encodeURIComponent(origin)}&b=${encodeURIComponent(task.id)}`, "compare"))));
  }
  return dl;
}

export async function taskPage(main, taskId, params, signal) {
  const base = `/ui/tasks/${encodeURIComponent(taskId)}`;
  const path = `/tasks/${encodeURIComponent(taskId)}`;
  const view = params.get("view") === "timeline" ? "timeline" : "tree";
  // the tree is requested at once, alongside the task: first paint needs both
  const treeRequest = view === "tree" ? api(`${path}/tree`, { signal }) : null;
  treeRequest?.catch(() => {}); // awaited (and reported) below
  let task;
  try {
    task = await api(path, { signal });
  } catch (error) {
    main.replaceChildren(el("h1", { text: "Task" }), problemBox(error));
    return;
  }
  const head = el("div", { class: "task-head" });
  const live = el("span", { class: "live", role: "status", "aria-live": "polite", text: "" });
  const message = el("div", { class: "task-message" });
  const approvals = el("div", { class: "approvals", id: "approvals", hidden: true });
  const cancel = el("button", { type: "button", class: "danger", id: "cancel-task", text: "Cancel task" });
  const tabs = el("nav", { class: "tabs", "aria-label": "Views" },
    link(base + (params.get("node") ? `?node=${params.get("node")}` : ""), "Tree",
      { "aria-current": view === "tree" ? "page" : undefined }),
    link(`${base}?view=timeline`, "Timeline", { "aria-current": view === "timeline" ? "page" : undefined }),
    link(`/ui/compare?a=${encodeURIComponent(taskId)}`, "Compare…"));

  function renderHead() {
    put(head,
      el("div", { class: "title-line" },
        el("h1", {}, "Task ", el("code", { text: task.id.slice(0, 12) })),
        statusBadge(task.status), live,
        el("span", { class: "spacer" }),
        task.finished ? null : cancel,
        copyButton(() => (view === "timeline" ? curl(`${path}/events?since=0&limit=1000`)
          : curl(`${path}/tree`)))),
      el("p", { class: "task-goal", text: task.resolved_goal || task.goal || "(the environment's goal)" }),
      summary(task),
      task.error ? el("p", { class: "problem", text: task.error }) : null,
      task.cancel_requested && !task.finished ? el("p", { class: "muted", text: "Cancel requested: the worker stops at the next LLM call." }) : null,
    );
  }
  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      task = await api(`${path}/cancel`, { method: "POST", signal });
      message.replaceChildren();
      renderHead();
    } catch (error) {
      message.replaceChildren(problemBox(error));
    } finally {
      cancel.disabled = false;
    }
  });
  renderHead();
  main.replaceChildren(head, message, approvals, tabs);
  const refreshApprovals = () => renderApprovals(approvals, taskId, {
    signal, onDecided: () => { refreshApprovals(); refreshTask(); } });
  refreshApprovals();

  let refreshTaskTimer = null;
  const refreshTask = () => {
    if (refreshTaskTimer) return;
    refreshTaskTimer = setTimeout(async () => {
      refreshTaskTimer = null;
      try {
        task = await api(path, { signal });
        renderHead();
      } catch { /* the next event retries */ }
    }, 300);
  };

  if (view === "timeline") {
    const box = el("div", { class: "timeline-box" });
    main.append(box);
    await renderTimeline(box, taskId, { signal });
    main.dataset.loaded = "true";
    return;
  }

  const layout = el("div", { class: "task-layout" });
  const treeBox = el("div", { class: "tree-box" });
  const panel = el("aside", { class: "node-panel", id: "node-panel", "aria-labelledby": "panel-title", hidden: true });
  layout.append(treeBox, panel);
  main.append(layout);

  const model = new TreeModel();
  let panelController = null;
  let openId = params.get("node") ? Number(params.get("node")) : null;

  const openNode = (id, { push = true } = {}) => {
    openId = id;
    if (push) history.pushState(null, "", `${base}?node=${id}`);
    panel.hidden = false;
    layout.classList.add("with-panel");
    panelController?.abort();
    panelController = new AbortController();
    renderNodePanel(panel, taskId, id, { signal: panelController.signal, onClose: closePanel, task, model });
    treeView.setActive(id, false);
  };
  const closePanel = () => {
    openId = null;
    panel.hidden = true;
    layout.classList.remove("with-panel");
    history.pushState(null, "", base);
    treeView.root.focus();
  };
  const treeView = new TreeView(model, { onOpen: (id) => openNode(id) });
  const escape = (event) => {
    if (event.key === "Escape" && openId !== null) {
      event.preventDefault();
      closePanel();
    }
  };
  treeView.root.addEventListener("keydown", escape);
  panel.addEventListener("keydown", escape);
  let treeData;
  try {
    treeData = await treeRequest;
  } catch (error) {
    treeBox.replaceChildren(problemBox(error));
    return;
  }
  model.load(treeData.tree);
  const empty = el("p", { class: "muted empty-tree", text: "No nodes yet: the task is queued." });
  put(treeBox, legendBox(), model.rootId === null ? empty : null, treeView.root);
  treeView.refresh();
  performance.mark("adapt:tree-painted");
  if (openId !== null) {
    treeView.reveal(openId);
    openNode(openId, { push: false });
  }
  main.dataset.loaded = "true";
  main.dataset.startSeq = String(treeData.last_seq);

  // the open node's panel, re-read on its events: one request at a time (the last events
  // are never missed: a request asked for while one runs follows it), as an update that keeps
  // the reader's expanded prompts, scroll position and focus
  let panelBusy = false;
  let panelAgain = false;
  const refreshPanel = async () => {
    if (panelBusy) {
      panelAgain = true;
      return;
    }
    panelBusy = true;
    try {
      await renderNodePanel(panel, taskId, openId, { signal: panelController.signal, onClose: closePanel, update: true, task, model });
    } finally {
      panelBusy = false;
      if (panelAgain && openId !== null) {
        panelAgain = false;
        refreshPanel();
      }
    }
  };

  // live: apply events in order, repaint at most once per frame
  const applied = [];
  window.adaptEventLog = applied;
  let scheduled = false;
  let panelStale = false;
  const repaint = () => {
    scheduled = false;
    model.recompute();
    if (model.rootId !== null) empty.remove();
    treeView.refresh();
    if (panelStale && openId !== null) {
      panelStale = false;
      refreshPanel();
    }
  };
  const onEvent = (event) => {
    applied.push(event.seq);
    main.dataset.lastSeq = String(event.seq);
    const data = event.data || {};
    if (event.type === "node.created" || event.type === "node.updated") {
      model.upsert(data.node, false);
      if (data.node.id === openId) panelStale = true;
    } else if (event.type === "step" && data.step?.node_id === openId) panelStale = true;
    else if (event.type === "llm_call" && data.call?.node_id === openId) panelStale = true;
    else if (event.type.startsWith("approval.") && data.node_id === openId) panelStale = true;
    if (event.type === "task.finished" || event.type === "llm_call" || event.type.startsWith("approval.")
        || event.type === "task.resumed") refreshTask();
    if (event.type.startsWith("approval.")) refreshApprovals();
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(repaint);
    }
  };
  if (treeData.finished) {
    live.textContent = "finished";
    return;
  }
  live.textContent = "connecting…";
  try {
    await followEvents(taskId, treeData.last_seq, onEvent, {
      signal,
      onState: (s) => {
        live.textContent = s === "live" ? "● live" : s === "reconnecting" ? "reconnecting…" : s;
        live.dataset.state = s;
      },
    });
    if (!signal.aborted) {
      live.textContent = "finished";
      refreshTask();
    }
  } catch (error) {
    if (!signal.aborted) message.replaceChildren(problemBox(error));
  }
}

export { go };
