// What the tree's badges and the node panel's fields mean: the legend above the tree, and the
// tooltip (title) of every badge and field, written once here.

import { el, fmtReward } from "./util.js";

// badge tooltips, by the value shown
export const CLAIM = {
  true: "claim ✓: the executor said it reached this node's goal (\"Task completed!\", or a reward ended its run)",
  false: "claim ✗: the executor said it could not (\"Task failed!\"), or its run ended without success (out of steps, too many failed actions)",
  null: "claim ?: the executor made no claim here (the node was not run, or the environment confirmed its goal before any step)",
};
export const VERIFIED = {
  true: "verified ✓: the environment checked this node's goal and confirmed it",
  false: "verified ✗: the environment checked this node's goal and refuted it",
  null: "verified ?: the environment could not tell whether this node's goal holds",
};

export function rewardTitle(reward, decomposed) {
  return decomposed
    ? `r ${fmtReward(reward)}: the best reward the environment gave anywhere in this node's subtree (its own executor run and its sub-tasks); 1 means the task's goal was reached`
    : `r ${fmtReward(reward)}: the best reward the environment gave during this node's executor run (1: the task's goal was reached; 0: not, which is normal for a sub-task)`;
}

export const ROLLUP = "this node's subtree: LLM calls · tokens (prompt + completion) · cost ($? while a model's price is unknown)";

// the node panel's fields
export const FIELDS = {
  status: "pending → running → succeeded / failed; skipped: not run (a sibling decided its AND/OR group, or the episode ended); cancelled: the task was cancelled; awaiting_approval: waits for a person's decision (approve, reject or edit above the tree)",
  outcome: "how the node's success was decided: by its own executor run, by its plan's AND/OR combination of sub-tasks, or by the environment's verdict on its goal",
  success: "whether this node's goal counts as reached: the executor's run when the node was not decomposed, else its plan's AND/OR combination (or the environment's verdict, with verification on)",
  "reward reached": "the best environment reward in this node's subtree: for the root, the task's reward",
  claim: "the executor's own outcome for this node, before any check: what it said, not what is true",
  verified: "the environment's verdict on the node's goal (verification): confirmed, refuted or unknown",
  evidence: "what the environment saw when it checked the goal",
  "executor reward": "the best reward the environment gave during this node's own executor run (0 when a decomposed node's executor gave up: its sub-tasks then did the work)",
  termination: "how this node's own executor run ended",
  why: "why the node was not decomposed, or not run",
  "reused from": "the node was solved by replaying a stored solution from the experience library (no LLM call): the library entry, and the task and node where it was learned",
  "plan from": "the node's plan came from the experience library (reuse.plans): taken as is with no planner call, or shown to the planner as an example; the library entry, and the task and node whose decomposition worked",
  kind: "task: an executor runs it; group: a nested AND/OR group of the plan (not run itself)",
  depth: "1 for the root; each decomposition adds 1, up to the task's d_max",
};

// termination values (adapt/engine/executors/episode.py) in words
export const TERMINATION = {
  reward: "the environment gave a reward (the goal was reached)",
  done: "the environment ended the episode without a reward",
  completed: "the executor said \"Task completed!\"",
  failed: "the executor said \"Task failed!\"",
  patience: "too many failed actions in a row",
  max_steps: "the step budget was used up",
  max_turns: "the turn budget was used up",
  verified: "the environment confirmed the goal",
  refuted: "the executor claimed success; the environment refuted it",
  repetition: "the executor repeated itself",
  reused: "a stored solution from the experience library was replayed and the environment confirmed the goal (no LLM call)",
};

// a short badge text for a node's reason (the full text is its tooltip)
export function reasonBadge(reason) {
  if (!reason) return null;
  if (reason.includes("d_max reached")) return "d_max";
  if (reason.includes("OR alternative succeeded")) return "OR decided";
  if (reason.includes("AND step failed")) return "AND failed";
  if (reason.includes("ended the episode")) return "episode over";
  if (reason.includes("budget")) return "budget";
  if (reason.includes("cancel")) return "cancelled";
  if (reason.includes("no steps")) return "empty plan";
  return "why?";
}

function entry(term, text) {
  return [el("dt", {}, term), el("dd", { text })];
}

function sample(cls, text) {
  return el("span", { class: cls, text });
}

export function legendBox() {
  return el("details", { class: "legend", id: "tree-legend" },
    el("summary", { text: "Legend: what the badges mean" }),
    el("dl", {},
      entry(sample("status status-succeeded", "succeeded"),
        "the node's status; skipped: not run, cancelled: the task was cancelled"),
      entry(sample("depth", "d2"), "depth: 1 for the root, +1 per decomposition, up to d_max"),
      entry([sample("logic logic-and", "AND"), " ", sample("join join-and", "∧")],
        "a decomposed node and its sub-tasks: every sub-task must succeed, in order"),
      entry([sample("logic logic-or", "OR"), " ", sample("join join-or", "∨")],
        "one alternative must succeed; the others are then skipped"),
      entry(sample("claim", "claim ✓ ✗ ?"), "what the executor said about this node: succeeded, failed, or nothing"),
      entry(sample("verified", "verified ✓ ✗ ?"), "the environment's check of the node's goal (verification)"),
      entry(sample("reward", "r 1"), "the best environment reward: of the node's executor run, or of its subtree for a decomposed node"),
      entry(sample("reason", "d_max"), "why a node was not decomposed or not run (hover it for the whole reason)"),
      entry(sample("rollup", "3 calls · 1,234 tok · $0"), ROLLUP),
      entry(sample("legend-failing", "red edge"), "the failing path: failed nodes whose ancestors all failed")));
}
