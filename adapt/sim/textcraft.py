"""``SimTextCraftModel``: a simulated weak LLM agent for TextCraft, usable as a real backend.

It reads ONLY the prompt text (see ``adapt.sim.prompt_parse`` for the contract) and answers as
the executor (the prompt ends with ``> ``: one action line), as the StateAct executor (the
template says ``StateAct format``: one ``goal``/``current inventory``/``thought``/``action`` step,
the same policy, see ``adapt.sim.stateact``), as the reflection writer (the prompt
ends with ``Reflection:``: 1-2 sentences on the failed trajectory), as the plan-and-execute
planner (the template asks for one detailed plan: every recipe level) or as the planner
(anything else: a one-level plan). A chat request that offers tools is answered with the tool
call the executor's next line stands for, and a planner request with a JSON schema with the
plan as JSON (``adapt.sim.structured``). Outputs are deterministic for the same prompt, knobs and temperature: the
per-call random draws come from ``sha256(seed, temperature, prompt)``.

Knobs (spec string ``sim:textcraft?capability=1&error_rate=0.1&seed=7``):

- ``capability`` (int >= 1, default 1): the craft depth it completes inside one executor run,
  counted from its believed inventory. 1: fetch base items and perform one craft whose
  ingredients it holds or can ``get``; 2: also craft those ingredients; ... Deeper goals get
  ``think: ... Task failed!`` as the first line.
- ``error_rate`` (0..1, default 0): per executor action, the chance of a realistic mistake
  (wrong ingredient count in a craft, a category such as ``planks`` in a ``get``, crafting
  before fetching, fetching one too few); per plan, the chance of a count mistake (ingredient
  amounts not multiplied by the number of crafts, one craft step short, a category in a fetch).
- ``false_success_rate`` (0..1, default 0): per executor action, the chance of claiming
  ``Task completed!`` while the goal is not met.
- ``format_error_rate`` (0..1, default 0): per call, the chance of malformed output (executor:
  two actions on one line or a stray ``> `` prefix; planner: no ``Execution Order:`` line or a
  step without its ``Step N:`` label).
- ``seed`` (int, default 0).

Token usage is estimated from text length, about 4 characters per token (rounded up), and
flagged ``estimated=True``. The model never sleeps: latency is ~0.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from dataclasses import replace

from adapt.llm.base import ChatRequest, ChatResponse, Usage
from adapt.sim.continuation import continue_text, split_partial
from adapt.sim.executor import Draws, Knobs, decide
from adapt.sim.planner import write_detailed_plan, write_plan
from adapt.sim.prompt_parse import parse_prompt
from adapt.sim.reflection import write_reflection
from adapt.sim.spec import Knob, KnobValue, canonical_spec, check_knobs
from adapt.sim.stateact import decide_stateact
from adapt.sim.structured import answered_calls, json_plan, text_prompt, tool_call_of

logger = logging.getLogger(__name__)

SIMULATOR_NAME = "textcraft"

#: characters per estimated token
CHARS_PER_TOKEN = 4

KNOBS: tuple[Knob, ...] = (
    Knob(
        "capability",
        int,
        1,
        minimum=1,
        maximum=64,
        always_shown=True,
        help="recipe depth completed inside one executor run",
    ),
    Knob(
        "error_rate",
        float,
        0.0,
        minimum=0.0,
        maximum=1.0,
        always_shown=True,
        help="chance of a realistic mistake per action / plan",
    ),
    Knob(
        "false_success_rate",
        float,
        0.0,
        minimum=0.0,
        maximum=1.0,
        help="chance of wrongly claiming 'Task completed!' per action",
    ),
    Knob(
        "format_error_rate",
        float,
        0.0,
        minimum=0.0,
        maximum=1.0,
        help="chance of malformed output per call",
    ),
    Knob("seed", int, 0, always_shown=True, help="random seed"),
)


def estimate_tokens(text: str) -> int:
    """About 4 characters per token, rounded up (0 for empty text)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def call_draws(seed: int, prompt: str, temperature: float = 0.0) -> Draws:
    """The per-call random draws: a function of (seed, temperature, prompt) only."""
    digest = hashlib.sha256()
    mix = f"{temperature:.6g}" if temperature > 0 else "0"
    digest.update(f"adapt-sim/textcraft\x00{seed}\x00{mix}\x00".encode())
    digest.update(prompt.encode("utf-8"))
    rng = random.Random(int.from_bytes(digest.digest()[:16], "big"))
    return Draws(
        false_success=rng.random(),
        error=rng.random(),
        error_kind=rng.random(),
        format_error=rng.random(),
        format_kind=rng.random(),
        detail=rng.random(),
    )


def apply_limits(text: str, stop: list[str], max_tokens: int | None) -> tuple[str, str]:
    """Cut ``text`` at the first stop sequence, then at ``max_tokens`` (~4 chars per token).

    Returns the text and the finish reason (``stop`` or ``length``).
    """
    cuts = [text.find(s) for s in stop if s]
    cuts = [c for c in cuts if c >= 0]
    if cuts:
        text = text[: min(cuts)]
    if max_tokens is not None and max_tokens >= 0 and len(text) > max_tokens * CHARS_PER_TOKEN:
        return text[: max_tokens * CHARS_PER_TOKEN], "length"
    return text, "stop"


class SimTextCraftModel:
    """A simulated TextCraft agent implementing ``adapt.llm.base.ChatModel``."""

    simulated = True

    def __init__(
        self,
        capability: int = 1,
        error_rate: float = 0.0,
        false_success_rate: float = 0.0,
        format_error_rate: float = 0.0,
        seed: int = 0,
    ) -> None:
        values = check_knobs(
            SIMULATOR_NAME,
            KNOBS,
            {
                "capability": capability,
                "error_rate": error_rate,
                "false_success_rate": false_success_rate,
                "format_error_rate": format_error_rate,
                "seed": seed,
            },
        )
        self.knob_values: dict[str, KnobValue] = values
        self.knobs = Knobs(
            capability=int(values["capability"]),
            error_rate=float(values["error_rate"]),
            false_success_rate=float(values["false_success_rate"]),
            format_error_rate=float(values["format_error_rate"]),
        )
        self.seed = int(values["seed"])
        self.name = canonical_spec(SIMULATOR_NAME, KNOBS, values)

    def __repr__(self) -> str:
        return f"SimTextCraftModel({self.name!r})"

    def respond(self, prompt: str, temperature: float = 0.0) -> tuple[str, str]:
        """The raw completion for ``prompt`` (before stop/max_tokens) and what it was.

        A prompt that ends inside an answer (the decoding monitor's resumed prompt) is
        continued: see ``adapt.sim.continuation``."""
        split = split_partial(prompt)
        if split is None:
            return self._respond(prompt, call_draws(self.seed, prompt, temperature))
        original, partial = split
        fresh = call_draws(self.seed, prompt, temperature)
        draws = replace(call_draws(self.seed, original, temperature),
                        format_error=fresh.format_error, format_kind=fresh.format_kind)
        text, kind = self._respond(original, draws)
        return continue_text(text, partial), f"{kind}:continued"

    def _respond(self, prompt: str, draws: Draws) -> tuple[str, str]:
        task = parse_prompt(prompt)
        if task.role == "executor":
            decision = decide(task, self.knobs, draws)
            return decision.text, decision.kind
        if task.role == "stateact":
            return decide_stateact(task, self.knobs, draws)
        if task.role == "reflection":
            return write_reflection(task)
        if task.role == "plan_and_execute":
            detailed = write_detailed_plan(task, self.knobs, draws)
            return detailed.text, detailed.kind
        plan = write_plan(task, self.knobs, draws)
        return plan.text, plan.kind

    async def complete(self, request: ChatRequest) -> ChatResponse:
        started = time.perf_counter()
        prompt = request.as_prompt()
        calls = None
        if request.tools:  # the tools executor: the next line as the tool call it stands for
            raw, kind = self.respond(text_prompt(request), request.temperature)
            call = tool_call_of(raw.splitlines()[0] if raw else "", answered_calls(request))
            calls = [call] if call is not None else None
            text, finish_reason = ("", "tool_calls") if call is not None else (raw, "stop")
            written = text + "".join(c.name + c.arguments for c in calls or ())
        else:
            raw, kind = self.respond(prompt, request.temperature)
            if request.json_schema is not None and request.role != "executor":
                raw, kind = json_plan(raw), f"{kind}:json"
            text, finish_reason = apply_limits(raw, request.stop, request.max_tokens)
            written = text
        logger.debug("%s %s -> %r %s (%s)", self.name, request.role, text, calls or "", kind)
        # the tools offered are prompt tokens too, as providers count them
        offered = json.dumps(request.tools, separators=(",", ":")) if request.tools else ""
        usage = Usage(
            prompt_tokens=estimate_tokens(prompt + offered),
            completion_tokens=estimate_tokens(written),
            estimated=True,
        )
        return ChatResponse(
            text=text,
            usage=usage,
            latency_s=time.perf_counter() - started,
            model=self.name,
            simulated=True,
            finish_reason=finish_reason,
            tool_calls=calls,
        )


def create(values: dict[str, KnobValue]) -> SimTextCraftModel:
    """Factory for the simulator registry."""
    return SimTextCraftModel(
        capability=int(values["capability"]),
        error_rate=float(values["error_rate"]),
        false_success_rate=float(values["false_success_rate"]),
        format_error_rate=float(values["format_error_rate"]),
        seed=int(values["seed"]),
    )
