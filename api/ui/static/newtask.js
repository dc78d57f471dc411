// New task, /ui/new: the environment's config form is generated from the JSON schema that
// GET /environments returns, and so are the strategies, executor kinds and profiles offered
// (plug-ins included); POST /tasks; problem details (4xx) are shown inline, and the fields they
// name are marked. There is one goal field: the environment's own (TextCraft's `goal`, which
// its config checks against `seed`) where it has one, else the task's `goal`.

import { api, curl } from "./api.js";
import { el, go } from "./util.js";
import { copyButton, problemBox } from "./widgets.js";

// every backend a model spec may name, as the field's help says it
const MODEL_HINT = "sim:textcraft?capability=1 (simulated, TextCraft only) · " +
  "script:{\"executor\": [...], \"planner\": [...]} (answers written in advance: any environment, offline) · " +
  "openai:<model>[@<base_url>] or openai-completions:<model>[@<base_url>] (an endpoint this server allows) · " +
  "local:smollm2 (a small real model in the server's process)";

function defaultModelText(info) {
  const d = info.default_model;
  if (!d) return "the server's default model";
  const plays = d.environments ? `, plays ${d.environments.join(", ")} only` : "";
  return `server default: ${d.model}${d.simulated ? ` (SIMULATED${plays})` : ""}`;
}

const BUDGET = [
  ["max_llm_calls", "max LLM calls", "integer"],
  ["max_tokens", "max tokens", "integer"],
  ["max_nodes", "max nodes", "integer"],
  ["max_cost_usd", "max cost (USD)", "number"],
  ["deadline_seconds", "deadline (s)", "number"],
];

function resolve(schema, root) {
  if (schema?.$ref?.startsWith("#/")) {
    return schema.$ref.slice(2).split("/").reduce((s, k) => s?.[k], root) || {};
  }
  if (schema?.anyOf) {
    const other = schema.anyOf.filter((s) => s.type !== "null");
    if (other.length === 1) return { ...resolve(other[0], root), default: schema.default, description: schema.description, title: schema.title };
  }
  return schema || {};
}

// one input per property; arrays of strings are one item per line, anything else is JSON
function fieldFor(name, raw, root, required) {
  const schema = resolve(raw, root);
  const id = `env-${name}`;
  const label = el("label", { for: id, text: (schema.title || name) + (required ? " *" : "") });
  let input;
  let read;
  if (schema.enum) {
    input = el("select", { id, name });
    if (!required) input.append(el("option", { value: "", text: "(default)" }));
    for (const v of schema.enum) input.append(el("option", { value: String(v), text: String(v), selected: schema.default === v }));
    read = () => (input.value === "" ? undefined : schema.enum.find((v) => String(v) === input.value));
  } else if (schema.type === "boolean") {
    input = el("select", { id, name },
      el("option", { value: "", text: `(default${schema.default !== undefined ? ": " + schema.default : ""})` }),
      el("option", { value: "true", text: "true" }), el("option", { value: "false", text: "false" }));
    read = () => (input.value === "" ? undefined : input.value === "true");
  } else if (schema.type === "integer" || schema.type === "number") {
    input = el("input", { id, name, type: "number", step: schema.type === "integer" ? "1" : "any",
      min: schema.minimum, max: schema.maximum, placeholder: schema.default ?? "" });
    read = () => (input.value === "" ? undefined : Number(input.value));
  } else if (schema.type === "array" && resolve(schema.items, root).type === "string") {
    input = el("textarea", { id, name, rows: 3, placeholder: "one per line" });
    read = () => {
      const lines = input.value.split("\n").map((l) => l.trim()).filter(Boolean);
      return lines.length ? lines : undefined;
    };
  } else if (schema.type === "string") {
    input = el("input", { id, name, type: "text", placeholder: schema.default ?? "" });
    read = () => (input.value === "" ? undefined : input.value);
  } else {
    input = el("textarea", { id, name, rows: 2, placeholder: "JSON" });
    read = () => (input.value.trim() === "" ? undefined : JSON.parse(input.value));
  }
  const help = schema.description ? el("small", { class: "help", text: schema.description }) : null;
  return { name, node: el("div", { class: "field", dataset: { field: `environment_config.${name}` } }, label, input, help), read };
}

function row(label, input, help, field) {
  return el("div", { class: "field", dataset: { field } }, el("label", { for: input.id, text: label }), input,
    help ? el("small", { class: "help", text: help }) : null);
}

export async function newTaskPage(main, params, signal) {
  let info;
  try {
    info = await api("/environments", { signal });
  } catch (error) {
    main.replaceChildren(el("h1", { text: "New task" }), problemBox(error));
    return;
  }
  const envSelect = el("select", { id: "environment", name: "environment" },
    info.items.map((e) => el("option", { value: e.name, text: e.name, selected: e.name === (params.get("environment") || "textcraft") })));
  const envHelp = el("small", { class: "help" });
  const configBox = el("fieldset", { class: "env-config" });
  const goal = el("input", { id: "goal", type: "text", placeholder: "(the environment's goal)" });
  const goalRow = row("goal", goal, "Optional: the goal to pursue instead of the environment's.", "goal");
  const modelNote = el("small", { class: "help model-note", id: "model-note" });
  let fields = [];
  const renderConfig = () => {
    const env = info.items.find((e) => e.name === envSelect.value);
    envHelp.textContent = env?.description || "";
    const schema = env?.config_schema || {};
    const required = new Set(schema.required || []);
    fields = Object.entries(schema.properties || {}).map(([name, s]) => fieldFor(name, s, schema, required.has(name)));
    configBox.replaceChildren(el("legend", { text: "environment_config" }), ...fields.map((f) => f.node));
    if (!fields.length) configBox.append(el("p", { class: "muted", text: "This environment takes no configuration." }));
    // one goal field: the environment's own where its config has one
    const own = Object.hasOwn(schema.properties || {}, "goal");
    goalRow.hidden = own;
    if (own) goal.value = "";
    const plays = info.default_model?.environments;
    modelNote.textContent = plays && !plays.includes(envSelect.value)
      ? `The default model plays only ${plays.join(", ")}: name a model for ${envSelect.value} (a script: model runs it offline).`
      : "";
  };
  envSelect.addEventListener("change", renderConfig);
  renderConfig();

  const strategy = el("select", { id: "strategy", name: "strategy" },
    info.strategies.map((s) => el("option", { value: s, text: s, selected: s === "adapt" })));
  const profile = el("select", { id: "profile" }, info.profiles.map((k) => el("option", { value: k, text: k, selected: k === "default" })));
  const executorKind = el("select", { id: "executor-kind" }, info.executors.map((k) => el("option", { value: k, text: k, selected: k === "react" })));
  const dMax = el("input", { id: "d_max", type: "number", min: 1, max: 8, value: 3 });
  const execModel = el("input", { id: "executor-model", type: "text", placeholder: defaultModelText(info), spellcheck: "false" });
  const planModel = el("input", { id: "planner-model", type: "text", placeholder: "executor's model", spellcheck: "false" });
  const budgetInputs = BUDGET.map(([name, label, type]) => [name, label, el("input", { id: `budget-${name}`, type: "number", step: type === "integer" ? "1" : "any" })]);

  const out = el("div", { class: "form-problem", "aria-live": "polite" });
  const body = () => {
    const config = {};
    for (const f of fields) {
      const v = f.read();
      if (v !== undefined) config[f.name] = v;
    }
    const b = { environment: envSelect.value, environment_config: config, strategy: strategy.value,
      d_max: dMax.value === "" ? undefined : Number(dMax.value), executor: { kind: executorKind.value } };
    if (profile.value !== "default") b.profile = profile.value;
    if (!goalRow.hidden && goal.value.trim()) b.goal = goal.value.trim();
    if (execModel.value.trim()) b.executor.model = execModel.value.trim();
    if (planModel.value.trim()) b.planner = { model: planModel.value.trim() };
    const budget = {};
    for (const [name, , input] of budgetInputs) if (input.value !== "") budget[name] = Number(input.value);
    if (Object.keys(budget).length) b.budget = budget;
    return b;
  };
  const form = el("form", { class: "new-task", novalidate: true },
    row("environment", envSelect, null, "environment"), envHelp, configBox, goalRow,
    el("div", { class: "grid" },
      row("strategy", strategy, null, "strategy"),
      row("profile", profile, "paper: the published protocols; default: ours.", "profile"),
      row("executor kind", executorKind, null, "executor.kind"),
      row("d_max", dMax, "Maximum decomposition depth (1–8).", "d_max")),
    el("div", { class: "grid" },
      el("div", { class: "field", dataset: { field: "executor.model" } },
        el("label", { for: execModel.id, text: "executor model" }), execModel,
        el("small", { class: "help", id: "model-hint", text: MODEL_HINT }), modelNote),
      row("planner model", planModel, "Unset: the executor's model.", "planner.model")),
    el("fieldset", { class: "grid" }, el("legend", { text: "budget" }),
      budgetInputs.map(([name, label, input]) => row(label, input, null, `budget.${name}`))),
    out,
    el("div", { class: "actions" },
      el("button", { type: "submit", class: "primary", id: "submit-task", text: "Run task" }),
      copyButton(() => {
        try { return curl("/tasks", { method: "POST", body: body() }); } catch (e) { return String(e); }
      })));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    for (const f of form.querySelectorAll("[aria-invalid]")) f.removeAttribute("aria-invalid");
    let payload;
    try {
      payload = body();
    } catch (error) {
      out.replaceChildren(problemBox({ problem: { title: "Invalid JSON in a field", detail: String(error.message) } }));
      return;
    }
    try {
      const task = await api("/tasks", { method: "POST", body: payload, signal });
      go(`/ui/tasks/${task.id}`);
    } catch (error) {
      out.replaceChildren(problemBox(error));
      for (const e of error.problem?.errors || []) {
        const box = form.querySelector(`[data-field="${CSS.escape(e.field)}"]`);
        box?.querySelector("input, select, textarea")?.setAttribute("aria-invalid", "true");
      }
    }
  });
  main.replaceChildren(el("h1", { text: "New task" }), form);
  main.dataset.loaded = "true";
}
