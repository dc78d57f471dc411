"""Profile ``paper``: d_max and the ReAct baseline's budget are the papers' per environment
(ADaPT: d_max 4 on TextCraft, the executor-only baseline 60 iterations on TextCraft and ALFWorld;
InterCode: 10 turns in all), and explicit values still win (scripted models, real TextCraft)."""

from __future__ import annotations

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.resolve import resolve_config
from adapt.envs.intercode_bash import InterCodeBash
from adapt.envs.intercode_sql import InterCodeSQL
from adapt.envs.textcraft import TextCraft
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel

GOAL = {"goal": "craft oak planks"}


def paper(**fields: object) -> RunConfig:
    return RunConfig.model_validate({"profile": "paper", **fields})


def test_paper_d_max_is_the_environments_unless_given() -> None:
    assert resolve_config(paper(), TextCraft)[0].d_max == 4
    assert resolve_config(paper(d_max=3), TextCraft)[0].d_max == 3  # explicit wins
    assert resolve_config(RunConfig(), TextCraft)[0].d_max == 3  # the default profile's
    out, _ = resolve_config(paper(), TextCraft)
    assert resolve_config(out, TextCraft)[0] == out  # idempotent


@pytest.mark.parametrize("env", [InterCodeSQL, InterCodeBash])
def test_intercode_react_gets_ten_turns_in_all(env: type) -> None:
    out, _ = resolve_config(paper(strategy="react"), env)
    assert out.react_steps == 10 and out.executor.max_steps == 10
    # only the ReAct design: the StateFlow strategy keeps its machine's turn limit
    assert resolve_config(paper(strategy="stateflow"), env)[0].react_steps is None
    assert resolve_config(RunConfig(strategy="react"), env)[0].react_steps is None


def _busy() -> FunctionModel:
    """An executor that looks at its inventory forever (no failure, no claim)."""

    def reply(request: ChatRequest) -> str:
        return "inventory"

    return FunctionModel(reply)


async def _executor_calls(config: RunConfig) -> tuple[int, str | None]:
    model, sink = _busy(), MemorySink()
    await run_task(TextCraft(), GOAL, config, model, sink=sink)
    return len(model.requests), sink.nodes[1].termination


async def test_react_baseline_runs_the_papers_sixty_steps_on_textcraft() -> None:
    # paper: d_max 4 from the profile, yet 60 steps (the paper's budget), not 20 x 4
    assert await _executor_calls(paper(strategy="react")) == (60, "max_steps")
    assert await _executor_calls(paper(strategy="react", d_max=2)) == (60, "max_steps")
    # an explicit budget wins; the default profile keeps steps x d_max
    assert (await _executor_calls(paper(strategy="react", react_steps=7)))[0] == 7
    assert (await _executor_calls(RunConfig(strategy="react", d_max=4)))[0] == 80
