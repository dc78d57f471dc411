"""The tools executor (``executor.kind: "tools"``): the environment's actions as function tools.

The environment declares its actions as tools (``adapt.envs.tools.DeclaresTools``). Each LLM
call is a chat request that offers them in OpenAI's ``tools`` field, with a system message
(``prompts/tools.txt``: the environment's description) and the task as the user message (the
task observation and the propagated context). The model answers with tool calls; each call is
turned into the environment's text action (``tool_action``), taken with the episode's step,
and its result goes back to the model as a ``tool`` message. Every call is one step of the
node: ``text`` is the text action, ``observation`` the result, ``extra["tool"]`` the call (its
``id``, ``name`` and ``arguments``) and ``raw`` what the model wrote. A call a person edited
before it ran (``approval.actions``) shows the edited call, and keeps the model's in
``extra["approval"]["proposed"]``; the model reads the edited arguments with the result.

ADaPT's self-assessment is two built-in tools: ``task_completed`` (the model says it achieved
the goal) and ``task_failed`` (it cannot); the environment's verdict still decides
(verification, ``Episode.conclude``). With ``executor.self_assessment="off"`` they are not
offered, and only the environment and the budget end the run.

A call the environment cannot take (unknown tool, arguments that are not JSON or do not fit
the schema) is a failed step whose observation says why (``Step.error``); an answer without a
tool call is a thought step answered with a reminder to call one. Both count toward
``patience``. The budget (``max_steps``) counts LLM calls; several calls in one answer are
taken in order, until one ends the episode. ``max_tokens`` is ``executor.max_tokens`` when set
explicitly, else ``DEFAULT_MAX_TOKENS``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any, ClassVar

from adapt.engine.config import ExecutorConfig, SelfAssessmentField, config_as
from adapt.engine.executors.base import THOUGHT_OK
from adapt.engine.executors.episode import Episode, EpisodeExecutor, Turn
from adapt.engine.gated import act_call
from adapt.engine.runtime import Run
from adapt.engine.tree import Step
from adapt.envs.base import package_text
from adapt.envs.tools import (
    RESERVED_NAMES,
    DeclaresTools,
    ToolCallError,
    ToolSpec,
    parse_arguments,
)
from adapt.errors import UserError
from adapt.llm.base import ChatRequest, Message, ToolCall

COMPLETED, FAILED = "task_completed", "task_failed"
#: completion limit per call unless ``executor.max_tokens`` is set explicitly (a call's JSON,
#: and any text the model writes beside it)
DEFAULT_MAX_TOKENS = 512
#: what the model is told when it answered without calling a tool
NO_CALL = "No tool was called. Act by calling one of the tools."


def _note(field: str, what: str) -> dict[str, Any]:
    return {"type": "object", "properties": {field: {"type": "string", "description": what}},
            "additionalProperties": False}


#: the self-assessment tools (``adapt.envs.tools.RESERVED_NAMES``)
ASSESSMENT: tuple[ToolSpec, ...] = (
    ToolSpec(COMPLETED, "Say that the goal is achieved (the environment checks it).",
             _note("summary", "What was done."), read_only=True, idempotent=True),
    ToolSpec(FAILED, "Say that the goal cannot be achieved.",
             _note("reason", "Why not."), read_only=True, idempotent=True),
)


def _prompt(name: str) -> str:
    text = package_text(__package__ or "adapt.engine.executors", "prompts", f"{name}.txt")
    if text is None:  # pragma: no cover - package data shipped with adapt
        raise FileNotFoundError(f"adapt.engine.executors lacks prompts/{name}.txt (reinstall)")
    return text


def _told(step: Step) -> str:
    """The result of a call as the model reads it: a call a person edited says so first."""
    if not step.extra or "approval" not in step.extra:
        return step.observation
    arguments = json.dumps(step.extra["tool"]["arguments"], ensure_ascii=False)
    return f"(A person changed the arguments of this call to {arguments}.)\n{step.observation}"


class ToolsConfig(ExecutorConfig):
    """The tools executor's settings (``executor.kind = "tools"``)."""

    #: ``off``: the self-assessment tools are not offered (only the environment ends the run)
    self_assessment: SelfAssessmentField = "thought"


class ToolsExecutor(EpisodeExecutor):
    config_model: ClassVar[type[ExecutorConfig]] = ToolsConfig

    """Runs one (sub-)task with the environment's tools; the shared episode's rules."""

    def __init__(self, run: Run, *, max_steps: int | None = None) -> None:
        super().__init__(run, max_steps=max_steps)
        env = run.env
        if not isinstance(env, DeclaresTools):
            raise UserError(
                f"executor kind 'tools' needs an environment that declares its actions as "
                f"tools; environment {env.name!r} declares none (give it tools() and "
                "tool_action(), see docs/writing-an-environment.md), or use another executor "
                "kind such as react")
        #: the environment, as the one that declares tools
        self.tooled: DeclaresTools = env
        cfg = config_as(run.config.executor, ToolsConfig)
        self.max_tokens = (cfg.max_tokens if "max_tokens" in cfg.model_fields_set
                           else DEFAULT_MAX_TOKENS)
        #: the self-assessment tools are offered (off: only the environment ends the run)
        self.claims = cfg.self_assessment != "off"

    def offered(self) -> list[ToolSpec]:
        """The tools of this episode: the environment's, then the self-assessment ones."""
        own = list(self.tooled.tools())
        clash = sorted({t.name for t in own} & RESERVED_NAMES)
        if clash:
            raise UserError(f"environment {self.run.env.name!r} declares tool(s) {', '.join(clash)}, "
                            "which the tools executor offers itself; rename them")
        return own + (list(ASSESSMENT) if self.claims else [])

    def system(self) -> str:
        text = _prompt("tools").replace("$description", self.run.env.description.strip())
        return text + (_prompt("tools_assessment") if self.claims else "")

    async def turns(self, episode: Episode) -> AsyncGenerator[Turn, None]:
        run = self.run
        tools = [t.function_schema() for t in self.offered()]
        task = episode.task if not episode.context else f"{episode.task}\n{episode.context}"
        messages = [Message(role="system", content=self.system()),
                    Message(role="user", content=task)]
        while True:
            request = ChatRequest(messages=list(messages), tools=tools,
                                  max_tokens=self.max_tokens, temperature=episode.temperature,
                                  role="executor")
            response = await run.call(episode.model, request, episode.node)
            calls = response.tool_calls or []
            messages.append(Message(role="assistant", content=response.text,
                                    tool_calls=calls or None))
            if not calls:
                step = episode.step(kind="thought", raw=response.text,
                                    text=response.text.strip(), observation=NO_CALL)
                messages.append(Message(role="user", content=NO_CALL))
                yield Turn([step], failures=[True])
                continue
            for i, call in enumerate(calls):
                step, declared = await self.take(episode, call,
                                                 response.text if i == 0 else "")
                messages.append(Message(role="tool", content=_told(step),
                                        tool_call_id=call.id))
                # one LLM call is one unit of the budget, however many tools it called
                yield Turn([step], declared=declared, cost=1 if i == 0 else 0,
                           continues=i < len(calls) - 1)

    async def take(self, episode: Episode, call: ToolCall, said: str
                   ) -> tuple[Step, bool | None]:
        """One tool call as a step, and the self-assessment it makes (``None``: none)."""
        raw = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
        error: str | None = None
        try:
            arguments: Any = parse_arguments(call.arguments)
        except ToolCallError as exc:
            arguments, error = call.arguments, str(exc)
        extra: dict[str, Any] = {"tool": {"id": call.id, "name": call.name,
                                          "arguments": arguments}}
        if said.strip():
            extra["thought"] = said.strip()
        if self.claims and call.name in (COMPLETED, FAILED):
            note = arguments.get("summary") or arguments.get("reason") \
                if isinstance(arguments, dict) else None
            text = f"{call.name}: {note}" if isinstance(note, str) and note else call.name
            return episode.step(kind="thought", raw=raw, text=text, observation=THOUGHT_OK,
                                extra=extra), call.name == COMPLETED
        if error is None:
            try:
                action = self.tooled.tool_action(call.name, arguments)
            except ToolCallError as exc:
                error = str(exc)
        if error is not None:
            return episode.step(kind="action", raw=raw, text="", observation=f"Error: {error}",
                                error=error, extra=extra), None
        sent = await act_call(self.run, episode.node, action, tool=call.name,
                              arguments=arguments if isinstance(arguments, dict) else None)
        if sent.edited:  # the step shows the call that ran, and keeps the model's
            extra["approval"] = {"decision": "edit",
                                 "proposed": {"name": call.name, "arguments": arguments,
                                              "action": action}}
            extra["tool"] = {**extra["tool"], "arguments": sent.arguments}
        result = sent.result
        return episode.step(kind="action", raw=raw, text=sent.action,
                            observation=result.observation, reward=float(result.reward),
                            done=result.done, extra=extra), None


__all__ = ["ASSESSMENT", "COMPLETED", "FAILED", "ToolsExecutor"]
