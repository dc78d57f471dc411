"""The StateAct executor (Rozanov & Rei, 2024): goal reminder + state tracking + thought + action.

Select it with ``RunConfig(executor={"kind": "stateact"})``; every strategy (ADaPT and the
baselines) gets it through ``adapt.engine.executors.make_executor``.

Each step the model writes, in ONE completion, ``key: value`` lines (keys are case-insensitive)::

    goal: craft beehive
    current inventory: [oak planks] (4)
    thought: I still need 3 honeycomb, a base material, so I fetch it.
    action: get 3 honeycomb

- ``goal``: a reminder of the (sub-)goal;
- one line per state field the environment declares (``Environment.state_fields``; TextCraft:
  ``current inventory``; none: no state lines);
- ``thought``: free reasoning (continuation lines without a key are appended to it);
- ``action``: the action sent to the environment. The LAST ``action:`` line wins. ``think`` (or
  ``think: ...``) is no action: the step is a thought, its observation is ``OK.``.

Rules (the shared episode's, ``adapt.engine.executors.episode``, as ReAct):

- success: the environment gives reward > 0, or a step's ``thought`` (or a ``think: ...``
  action) says ``Task completed!``; failure: it says ``Task failed!``. The declaring step's
  action, if it is a real one, is still taken first (a reward there wins); the demos end with
  ``action: think``;
- a step without an (non-empty) ``action:`` line and without such a declaration records a
  per-step error (``Step.error``), shows the model an ``Invalid step: ...`` observation and
  counts toward ``patience`` like a failed action; the run continues;
- ``patience`` consecutive failed / ``OK.`` / invalid steps fail the run; so does ``max_steps``;
- ``executor.repeat_limit`` (StateAct's code: 5, profile paper on ALFWorld): the run fails
  (``repetition``) when the model writes the same step that many times in a row after the first;
  that step is recorded, not executed. ``executor.self_assessment="off"`` (the same profile):
  no declaration ends the run, only the environment and the budget do.

The prompt is the environment's ``stateact`` template (``$task``, ``$context``, and optionally
``$state_fields`` and ``$step_format``) followed by the previous steps, each rendered from its
parsed fields in the canonical order and closed by an ``observation: ...`` line. The model writes
one full step per call: the request stops at ``"\\nobservation:"``. Its ``max_tokens`` is the
configured ``executor.max_tokens``, by default ``DEFAULT_MAX_TOKENS`` (a step is
several lines; ReAct's 128-token default is for one line): the default of
``StateActConfig.max_tokens``.

``Step.extra`` holds the parsed fields: ``{"goal": ..., "state": {field: value}, "thought": ...}``
plus ``"warnings"`` (malformed or unknown lines, truncation) when there are any. ``Step.text`` is
the action (``think: <thought>`` for a thought step, ``""`` when the action is missing); ``raw`` is
the whole completion.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from adapt.engine.config import ExecutorConfig, SelfAssessmentField, config_as, field_info
from adapt.engine.executors.base import THOUGHT_OK
from adapt.engine.executors.episode import Ending, Episode, EpisodeExecutor, Turn, declaration
from adapt.engine.gated import act
from adapt.engine.prompts import render
from adapt.engine.runtime import Run
from adapt.engine.tree import Termination
from adapt.errors import UserError
from adapt.llm.base import ChatRequest

TEMPLATE = "stateact"
#: the model writes one step per call and stops before the engine's observation line
STOP = "\nobservation:"
#: completion limit per step unless ``executor.max_tokens`` is set explicitly
DEFAULT_MAX_TOKENS = 384
GOAL, THOUGHT, ACTION, OBSERVATION = "goal", "thought", "action", "observation"

_KEY_LINE = re.compile(r"([A-Za-z][A-Za-z0-9 _-]{0,39}?)\s*:(?:\s+|$)(.*)")


def normalize_key(key: str) -> str:
    """``Current_Inventory `` -> ``current inventory``."""
    return " ".join(key.replace("_", " ").lower().split())


@dataclass(slots=True)
class StateActOutput:
    """One parsed step. ``action`` is ``None`` when no non-empty ``action:`` line was written."""

    goal: str | None = None
    state: dict[str, str] = field(default_factory=dict)
    thought: str | None = None
    action: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: why ``action`` is None (``None`` when there is an action)
    error: str | None = None

    @property
    def is_thought(self) -> bool:
        """``action: think`` / ``action: think: ...``: no environment action."""
        return self.action is not None and (
            self.action.lower() == "think" or self.action.lower().startswith("think:")
        )

    @property
    def declaration(self) -> bool | None:
        """True: the step says the task is completed; False: failed; None: neither."""
        texts = [self.thought or ""]
        if self.is_thought and self.action is not None:
            texts.append(self.action)
        return declaration("\n".join(texts))

    def extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {"goal": self.goal, "state": dict(self.state),
                               "thought": self.thought}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def parse_output(raw: str, state_fields: tuple[str, ...] | list[str] = ()) -> StateActOutput:
    """Parse one StateAct step from a completion.

    A line ``key: value`` whose key is ``goal``, ``thought``, ``action`` or one of
    ``state_fields`` sets that field (a repeated key: the last one wins, so the LAST ``action:``
    line is the action). A leading ``>`` is ignored. Other lines continue the previous goal,
    state or thought field (never the one-line action); an unknown ``key:`` line is kept as such
    continuation text and warned about. An ``observation:`` line (a made-up observation) ends the
    step: the rest is ignored.
    """
    fields = tuple(normalize_key(f) for f in state_fields)
    known = {GOAL, THOUGHT, ACTION, *fields}
    out = StateActOutput()
    values: dict[str, str] = {}
    current: str | None = None
    for number, original in enumerate(raw.splitlines(), start=1):
        line = original.strip()
        if line.startswith(">"):
            line = line[1:].strip()
        if not line:
            continue
        match = _KEY_LINE.fullmatch(line)
        key = normalize_key(match.group(1)) if match else None
        if key == OBSERVATION:
            out.warnings.append(f"line {number}: ignored a made-up observation and what follows")
            break
        if match is not None and key in known:
            value = match.group(2).strip()
            if key in values and key != ACTION:
                out.warnings.append(f"line {number}: repeated {key!r}; the last one is used")
            values[key] = value
            current = key
            continue
        if match is not None:
            out.warnings.append(f"line {number}: unknown field {key!r}")
        if current is None or current == ACTION:
            out.warnings.append(f"line {number}: text outside a field ignored: {line[:60]!r}")
            continue
        values[current] = f"{values[current]} {line}".strip()
    out.goal = values.get(GOAL)
    out.thought = values.get(THOUGHT)
    out.state = {f: values[f] for f in fields if f in values}
    action = values.get(ACTION)
    if action is None:
        out.error = "no 'action:' line in the model output"
    elif not action:
        out.error = "the 'action:' line is empty"
    else:
        out.action = action
    return out


def step_format(state_fields: tuple[str, ...] | list[str]) -> str:
    """The skeleton of one step, e.g. ``goal: ...\\ncurrent inventory: ...\\nthought: ...``."""
    keys = [GOAL, *(normalize_key(f) for f in state_fields), THOUGHT, ACTION]
    return "\n".join(f"{k}: ..." for k in keys)


def render_step(out: StateActOutput, observation: str,
                state_fields: tuple[str, ...] | list[str] = ()) -> str:
    """One step of the trajectory in the prompt: the parsed fields in canonical order (those the
    model wrote), then ``observation: ...``."""
    lines: list[str] = []
    if out.goal is not None:
        lines.append(f"{GOAL}: {out.goal}")
    for f in state_fields:
        value = out.state.get(normalize_key(f))
        if value is not None:
            lines.append(f"{normalize_key(f)}: {value}")
    if out.thought is not None:
        lines.append(f"{THOUGHT}: {out.thought}")
    if out.action is not None:
        lines.append(f"{ACTION}: {out.action}")
    lines.append(f"{OBSERVATION}: {observation}")
    return "\n".join(lines) + "\n"


def invalid_observation(error: str, state_fields: tuple[str, ...] | list[str]) -> str:
    keys = ", ".join(f"{k}:" for k in (GOAL, *(normalize_key(f) for f in state_fields), THOUGHT))
    return f"Invalid step: {error}. Write {keys} and action: lines."


class StateActConfig(ExecutorConfig):
    """The StateAct executor's settings (``executor.kind = "stateact"``)."""

    kind: str = field_info(ExecutorConfig, "kind", default="stateact")
    max_tokens: int = field_info(ExecutorConfig, "max_tokens", default=DEFAULT_MAX_TOKENS)
    repeat_limit: int | None = Field(
        default=None, ge=1, le=500,
        description="StateAct executor: the run fails when the model writes the same step this "
        "many times in a row after the first (not executed again); null: no such rule. "
        "Profile 'paper' on ALFWorld: 5, as StateAct's code.",
    )
    self_assessment: SelfAssessmentField = "thought"


class StateActExecutor(EpisodeExecutor):
    """Runs one (sub-)task with StateAct steps; the shared episode's rules (as ReAct)."""

    config_model: ClassVar[type[ExecutorConfig]] = StateActConfig

    def __init__(self, run: Run, *, max_steps: int | None = None) -> None:
        super().__init__(run, max_steps=max_steps)
        cfg = config_as(run.config.executor, StateActConfig)
        self.max_tokens = cfg.max_tokens
        self.state_fields: tuple[str, ...] = tuple(
            normalize_key(f) for f in run.env.state_fields or ())
        #: StateAct's code: no self-assessed ending, and a stop after repeated steps
        self.no_claims = cfg.self_assessment == "off"
        self.repeat_limit = cfg.repeat_limit
        try:
            run.env.prompt_template(TEMPLATE)
        except KeyError:
            raise UserError(
                f"executor kind 'stateact' needs a {TEMPLATE!r} prompt template, which "
                f"environment {run.env.name!r} does not have; add prompts/{TEMPLATE}.txt "
                "(few-shot examples in the StateAct format) to its package or override "
                "prompt_template()"
            ) from None

    def header(self, task: str, context: str | None) -> str:
        return render(self.run.env, TEMPLATE, task=task, context=context,
                      state_fields=", ".join(self.state_fields),
                      step_format=step_format(self.state_fields))

    async def turns(self, episode: Episode) -> AsyncGenerator[Turn, None]:
        run = self.run
        header = self.header(episode.task, episode.context)
        trajectory: list[str] = []
        previous: str | None = None
        repeats = 0
        while True:
            request = ChatRequest(
                prompt=header + "".join(trajectory),
                stop=[STOP],
                max_tokens=self.max_tokens,
                temperature=episode.temperature,
                role="executor",
            )
            response = await run.call(episode.model, request, episode.node)
            out = parse_output(response.text, self.state_fields)
            if response.finish_reason == "length":
                out.warnings.append("the output was cut at max_tokens")
            written = response.text.strip()
            repeats = repeats + 1 if written == previous else 0
            previous = written
            if self.repeat_limit is not None and repeats >= self.repeat_limit:
                step = episode.step(kind="thought", raw=response.text, text=out.action or "",
                                    observation="", extra=out.extra(),
                                    error=f"the same step {repeats + 1} times in a row")
                yield Turn([step], failures=[False], end=Ending(False, None, Termination.REPETITION))
                return
            declared = None if self.no_claims else out.declaration
            reward, done, error = 0.0, False, None
            if out.action is None and declared is None:
                kind, text, error = "thought", "", out.error or "no action"
                observation = invalid_observation(error, self.state_fields)
            elif out.action is None or out.is_thought:
                kind, observation = "thought", THOUGHT_OK
                text = f"think: {out.thought}" if out.thought else out.action or ""
            else:
                kind, text = "action", out.action
                result = await act(run, episode.node, out.action)
                observation, reward, done = result.observation, float(result.reward), result.done
            step = episode.step(kind=kind, raw=response.text, text=text, observation=observation,
                                reward=reward, done=done, error=error, extra=out.extra())
            trajectory.append(render_step(out, observation, self.state_fields))
            yield Turn([step], declared=declared)


__all__ = ["StateActExecutor", "StateActOutput", "parse_output", "render_step", "step_format"]
