"""Attribute sets of each span kind: the OpenTelemetry GenAI semantic conventions (agent and model
spans, development status, as published with semantic conventions v1.41) plus OpenInference's
span kinds and LLM attributes (so Phoenix shows its agent/chain/LLM/tool icons), plus ``adapt.*``.

Plain dictionaries of str/bool/int/float (or lists of str): no OpenTelemetry import here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from adapt.engine.events import LLMCallFailed
from adapt.engine.tree import LLMCall, Node, Step, TaskResult
from adapt.llm.base import ChatResponse

#: the GenAI conventions this module follows (docs/observability.md says the same)
SEMCONV_VERSION = "1.41.0"

Attributes = dict[str, Any]

#: OpenInference span kinds
AGENT, CHAIN, LLM, TOOL = "AGENT", "CHAIN", "LLM", "TOOL"


@dataclass(frozen=True)
class TaskInfo:
    """What the spans say about the task (from its row)."""

    task_id: str
    tenant: str
    environment: str
    strategy: str
    d_max: int
    profile: str
    executor_kind: str
    executor_model: str
    planner_model: str
    goal: str | None = None


def provider(spec: str) -> str:
    """``gen_ai.provider.name`` of a model spec: ``openai`` for ``openai:`` specs (any
    OpenAI-compatible endpoint), else ``adapt.<backend>`` (``adapt.sim``, ``adapt.local``)."""
    prefix = spec.split(":", 1)[0] if ":" in spec else "openai"
    return "openai" if prefix == "openai" else f"adapt.{prefix}"


def _clean(attrs: Attributes) -> Attributes:
    return {k: v for k, v in attrs.items() if v is not None}


def workflow(task: TaskInfo) -> Attributes:
    return _clean({
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": task.strategy,
        "gen_ai.conversation.id": task.task_id,
        "openinference.span.kind": CHAIN,
        "session.id": task.task_id,
        "adapt.task.id": task.task_id,
        "adapt.tenant": task.tenant,
        "adapt.environment": task.environment,
        "adapt.strategy": task.strategy,
        "adapt.d_max": task.d_max,
        "adapt.profile": task.profile,
        "adapt.executor.kind": task.executor_kind,
        "adapt.executor.model": task.executor_model,
        "adapt.planner.model": task.planner_model,
        "adapt.task.goal": task.goal,
        "input.value": task.goal,
    })


def workflow_result(result: TaskResult) -> Attributes:
    return _clean({
        "adapt.task.status": result.status,
        "adapt.task.success": result.success,
        "adapt.task.claimed_success": result.claimed_success,
        "adapt.task.verdict": result.verdict,
        "adapt.task.reward": result.reward,
        "adapt.task.goal": result.goal,
        "input.value": result.goal,
        "adapt.task.nodes": result.nodes,
        "adapt.task.max_depth": result.max_depth,
        "adapt.task.budget_exceeded": result.budget_exceeded,
        "gen_ai.usage.input_tokens": result.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": result.usage.completion_tokens,
        "adapt.llm_calls": result.usage.llm_calls,
        "adapt.cost_usd": result.usage.cost_usd,
        "output.value": result.status,
    })


def node_name(node: Node, task: TaskInfo) -> str:
    if node.kind == "group":
        return f"{node.logic or 'and'} group"
    return f"invoke_agent {task.executor_kind}"


def node(node: Node, task: TaskInfo) -> Attributes:
    """A task node (``invoke_agent``, the executor kind as agent name) or a group node (an
    AND/OR combination of its children: a chain, no GenAI operation)."""
    common = _clean({
        "gen_ai.conversation.id": task.task_id,
        "adapt.node.id": node.id,
        "adapt.node.parent_id": node.parent_id,
        "adapt.node.kind": node.kind,
        "adapt.node.depth": node.depth,
        "adapt.node.position": node.position,
        "adapt.node.goal": node.goal,
        "adapt.node.label": node.label,
        "adapt.node.logic": node.logic,
        "adapt.node.status": node.status,
        "adapt.node.success": node.success,
        "input.value": node.goal,
        "output.value": node.status,
    })
    if node.kind == "group":
        return {**common, "openinference.span.kind": CHAIN}
    return {**common, **_clean({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": task.executor_kind,
        "openinference.span.kind": AGENT,
        # claimed vs verified outcome: the executor's claim and the environment's verdict
        "adapt.node.claim": node.claim,
        "adapt.node.verdict": node.verdict,
        "adapt.node.evidence": node.evidence,
        "adapt.node.executor_success": node.executor_success,
        "adapt.node.termination": node.termination,
        "adapt.node.reward": node.reward,
        "adapt.node.steps": node.steps_count,
        "gen_ai.usage.input_tokens": node.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": node.usage.completion_tokens,
        "adapt.node.error": node.error,
    })}


def plan(node: Node, task: TaskInfo) -> Attributes:
    """The ``plan`` operation (planning or task decomposition) of ``node``."""
    p = node.plan
    return _clean({
        "gen_ai.operation.name": "plan",
        "gen_ai.agent.name": task.executor_kind,
        "gen_ai.conversation.id": task.task_id,
        "openinference.span.kind": CHAIN,
        "adapt.node.id": node.id,
        "adapt.plan.expression": p.expression_text if p is not None else None,
        "adapt.plan.steps": len(p.steps) if p is not None else 0,
        "adapt.plan.step_goals": list(p.steps) if p is not None and p.steps else None,
        "adapt.plan.warnings": list(p.warnings) if p is not None and p.warnings else None,
        "input.value": node.goal,
        "output.value": p.expression_text if p is not None else None,
    })


def operation(call: LLMCall) -> str:
    return "chat" if call.messages else "text_completion"


def request_model(call: LLMCall) -> str:
    """The model the call asked for (calls stored before it was recorded: the response's)."""
    return call.request_model or call.model


def call_spec(call: LLMCall | LLMCallFailed, task: TaskInfo) -> str:
    return task.planner_model if call.role == "planner" else task.executor_model


def failed_operation(failure: LLMCallFailed) -> str:
    return "chat" if failure.chat else "text_completion"


def llm_failed(failure: LLMCallFailed, task: TaskInfo, error_type: str) -> Attributes:
    """A call the provider failed for good: the client span's attributes, no response."""
    spec = call_spec(failure, task)
    return _clean({
        "gen_ai.operation.name": failed_operation(failure),
        "gen_ai.provider.name": provider(spec),
        "gen_ai.request.model": failure.model,
        "gen_ai.conversation.id": task.task_id,
        "error.type": error_type,
        "openinference.span.kind": LLM,
        "llm.model_name": failure.model,
        "llm.provider": provider(spec),
        "adapt.llm.role": failure.role,
        "adapt.llm.retries": failure.retries,
        "adapt.node.id": failure.node_id,
    })


def llm(call: LLMCall, response: ChatResponse | None, task: TaskInfo, *,
        content: bool) -> Attributes:
    """An LLM call: a client span ``chat {model}`` / ``text_completion {model}``. Prompt and
    completion only with ``content`` (the operator's opt-in)."""
    spec = call_spec(call, task)
    finish = response.finish_reason if response is not None else None
    cached = response.usage.cached_tokens if response is not None else 0
    attrs = _clean({
        "gen_ai.operation.name": operation(call),
        "gen_ai.provider.name": provider(spec),
        "gen_ai.request.model": request_model(call),
        "gen_ai.response.model": (response.model if response is not None and response.model
                                  else call.model),
        "gen_ai.conversation.id": task.task_id,
        "gen_ai.usage.input_tokens": call.prompt_tokens,
        "gen_ai.usage.output_tokens": call.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": cached or None,
        "gen_ai.response.finish_reasons": [finish] if finish else None,
        "openinference.span.kind": LLM,
        "llm.model_name": call.model,
        "llm.provider": provider(spec),
        "llm.token_count.prompt": call.prompt_tokens,
        "llm.token_count.completion": call.completion_tokens,
        "llm.token_count.total": call.prompt_tokens + call.completion_tokens,
        "adapt.llm.call_id": call.id,
        "adapt.llm.role": call.role,
        "adapt.llm.simulated": call.simulated,
        "adapt.llm.usage_estimated": call.usage_estimated,
        "adapt.llm.retries": call.retries,
        "adapt.llm.cost_usd": call.cost_usd,
        "adapt.node.id": call.node_id,
    })
    if content:
        attrs.update(llm_content(call, finish))
    return attrs


def _parts(content: str, calls: list[dict[str, Any]] | None = None,
           answers: str | None = None) -> list[dict[str, Any]]:
    """A message's parts: its text, the tools it calls, or the call a tool message answers."""
    if answers is not None:
        return [{"type": "tool_call_response", "id": answers, "response": content}]
    parts: list[dict[str, Any]] = [{"type": "text", "content": content}] if content or not calls \
        else []
    parts += [{"type": "tool_call", "id": c.get("id"), "name": c.get("name"),
               "arguments": c.get("arguments")} for c in calls or ()]
    return parts


def llm_content(call: LLMCall, finish: str | None) -> Attributes:
    messages = call.messages or ([{"role": "user", "content": call.prompt}]
                                 if call.prompt is not None else [])
    out: Attributes = {
        "gen_ai.input.messages": json.dumps([
            {"role": m.get("role", "user"),
             "parts": _parts(m.get("content", ""), m.get("tool_calls"), m.get("tool_call_id"))}
            for m in messages]),
        "gen_ai.output.messages": json.dumps([
            {"role": "assistant", "parts": _parts(call.completion, call.tool_calls),
             "finish_reason": finish or "stop"}]),
        "output.value": call.completion,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": call.completion,
    }
    if call.tools:
        out["gen_ai.tool.definitions"] = json.dumps(call.tools)
    if call.prompt is not None:
        out["input.value"] = call.prompt
    for i, m in enumerate(messages):
        out[f"llm.input_messages.{i}.message.role"] = m.get("role", "user")
        out[f"llm.input_messages.{i}.message.content"] = m.get("content", "")
    return out


def called_tool(step: Step) -> dict[str, Any] | None:
    """The tool call a step stands for (the tools executor's ``extra["tool"]``), if any."""
    called = (step.extra or {}).get("tool")
    return called if isinstance(called, dict) and isinstance(called.get("name"), str) else None


def tool(step: Step, task: TaskInfo, *, content: bool) -> Attributes:
    """An environment action, ``execute_tool {environment}``, or a call of one of its tools
    (the tools executor), ``execute_tool {tool}``."""
    called = called_tool(step)
    name = called["name"] if called is not None else task.environment
    attrs = _clean({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": "function" if called is not None else "extension",
        "gen_ai.tool.call.id": (str(called.get("id")) if called is not None and called.get("id")
                                else f"{step.node_id}.{step.index}"),
        "gen_ai.conversation.id": task.task_id,
        "openinference.span.kind": TOOL,
        "tool.name": name,
        "adapt.node.id": step.node_id,
        "adapt.step.index": step.index,
        "adapt.step.reward": step.reward,
        "adapt.step.done": step.done,
        "adapt.step.error": step.error,
    })
    if content:
        arguments = step.text if called is None else (
            called.get("arguments") if isinstance(called.get("arguments"), str)
            else json.dumps(called.get("arguments")))
        attrs.update({"gen_ai.tool.call.arguments": arguments,
                      "gen_ai.tool.call.result": step.observation,
                      "input.value": arguments, "output.value": step.observation})
        if called is not None:
            attrs["adapt.step.action"] = step.text
    return attrs
