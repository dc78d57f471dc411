"""Model cascades (``executor.models``, issue 17): a failed node is retried with the next
executor model, before its decomposition (``cascade: before``) or after it failed
(``after``); each attempt is a child node labelled with its model. Simulated models of
different capability: ``capability=1`` fails (says "Task failed!") on goals deeper than one
craft, ``capability=3`` completes depth-3 goals in one run."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.config import ModelSpecs
from adapt.engine.tree import Node, TaskResult
from adapt.envs.textcraft import TextCraft
from adapt.envs.textcraft.task_sets import tasks
from adapt.llm.base import ChatModel
from adapt.llm.spec import load_model

WEAK = "sim:textcraft?capability=1"
STRONG = "sim:textcraft?capability=3"
DEPTH3 = next(t for t in tasks("test") if t.depth == 3)


def models() -> tuple[ChatModel, ChatModel]:
    return load_model(WEAK), load_model(STRONG)


async def run(executors: ChatModel | list[ChatModel], planner: ChatModel,
              **config: Any) -> tuple[TaskResult, MemorySink]:
    sink = MemorySink()
    result = await run_task(TextCraft(), DEPTH3.config, RunConfig.model_validate(config),
                            executors, planner_model=planner, sink=sink)
    return result, sink


def kids(sink: MemorySink, node: Node) -> list[Node]:
    return sink.children(node.id)


def executor_models(sink: MemorySink) -> list[str]:
    """The model of every executor call, in call order, de-duplicated in runs."""
    out: list[str] = []
    for call in sink.calls:
        if call.role == "executor" and (not out or out[-1] != call.model):
            out.append(call.model)
    return out


async def test_before_the_next_model_retries_the_failed_node_before_any_decomposition(
) -> None:
    weak, strong = models()
    result, sink = await run([weak, strong], weak, d_max=3)
    assert result.status == "succeeded" and result.reward == 1.0
    root = sink.root
    assert root is not None
    first, second = kids(sink, root)
    assert (first.label, first.status, first.depth) == (f"attempt 1: {weak.name}", "failed", 1)
    assert (second.label, second.status, second.depth) == (f"attempt 2: {strong.name}",
                                                           "succeeded", 1)
    assert first.goal == second.goal == root.goal and first.claim is False
    # the cascade order: the weak model's calls, then the strong one's; no plan was needed
    assert executor_models(sink) == [weak.name, strong.name]
    assert "planner" not in result.usage_by_role and root.plan is None
    # the node records the deciding attempt's outcome
    assert (root.claim, root.verdict, root.success) == (True, "confirmed", True)


async def test_after_decomposes_with_the_first_model_and_escalates_only_where_that_failed(
) -> None:
    weak, strong = models()
    result, sink = await run([weak, strong], weak, d_max=3, executor={"cascade": "after"})
    assert result.status == "succeeded"
    root = sink.root
    assert root is not None and root.plan is not None
    attempt, plan = kids(sink, root)[:2]
    assert attempt.label == f"attempt 1: {weak.name}" and attempt.status == "failed"
    assert (plan.kind, plan.label, plan.logic, plan.depth) == ("group", "plan", "and", 2)
    assert [n.goal for n in kids(sink, plan)] == root.plan.steps
    # the weak model solves every step of the decomposition: the strong one never runs
    assert strong.name not in {c.model for c in sink.calls}
    assert result.usage_by_role["planner"].llm_calls >= 1


async def test_after_escalates_at_d_max_where_no_decomposition_can_help() -> None:
    weak, strong = models()
    result, sink = await run([weak, strong], weak, d_max=1, executor={"cascade": "after"})
    assert result.status == "succeeded"
    assert executor_models(sink) == [weak.name, strong.name]
    root = sink.root
    assert root is not None
    assert [n.label for n in kids(sink, root)] == [f"attempt 1: {weak.name}",
                                                   f"attempt 2: {strong.name}"]


async def test_a_first_model_that_succeeds_is_the_only_attempt() -> None:
    weak, strong = models()
    result, sink = await run([strong, weak], weak, d_max=3)
    assert result.status == "succeeded"
    root = sink.root
    assert root is not None
    assert [n.label for n in kids(sink, root)] == [f"attempt 1: {strong.name}"]
    assert weak.name not in {c.model for c in sink.calls if c.role == "executor"}


async def test_every_model_failing_falls_back_to_decomposition_then_fails_at_d_max() -> None:
    weak = load_model(WEAK)
    weaker = load_model(WEAK + "&seed=5")
    result, sink = await run([weak, weaker], weak, d_max=1)
    assert result.status == "failed"
    root = sink.root
    assert root is not None
    assert [n.status for n in kids(sink, root)] == ["failed", "failed"]
    assert root.success is False and root.claim is False


async def test_a_list_of_one_is_the_single_executor_model() -> None:
    weak, _ = models()
    single, single_sink = await run(weak, weak, d_max=3)
    listed, listed_sink = await run([weak], weak, d_max=3)
    assert listed.model_dump(exclude={"wall_seconds"}) == single.model_dump(
        exclude={"wall_seconds"})
    assert all(n.label is None for n in listed_sink.nodes.values())
    assert len(listed_sink.nodes) == len(single_sink.nodes)


async def test_react_with_a_cascade_runs_each_model_in_turn() -> None:
    weak, strong = models()
    result, sink = await run([weak, strong], weak, strategy="react", d_max=2)
    assert result.status == "succeeded"
    assert executor_models(sink) == [weak.name, strong.name]


async def test_a_refuted_attempt_hands_its_evidence_to_the_next_model() -> None:
    weak, strong = models()
    result, sink = await run([weak, strong], weak, d_max=1)
    root = sink.root
    assert root is not None
    first, second = kids(sink, root)
    assert first.verdict == "refuted" and first.evidence
    assert first.evidence in (second.context_in or "")
    assert result.status == "succeeded"


@pytest.mark.parametrize(("models_", "message"), [
    ([WEAK, WEAK], "listed twice"),
    ([WEAK] * 9, "at most 8"),
    ([""], "at least 1 character"),
])
def test_models_are_validated(models_: list[str], message: str) -> None:
    """A resolved config's models (``ModelSpecs``; the API's ``executor.models`` maps to it)."""
    with pytest.raises(ValidationError, match=message) as info:
        ModelSpecs.model_validate({"executor": models_, "planner": WEAK})
    assert info.value.errors()[0]["loc"][:1] == ("executor",)


def test_cascade_mode_is_before_or_after() -> None:
    assert RunConfig().executor.cascade == "before"
    with pytest.raises(ValidationError, match="'before' or 'after'"):
        RunConfig.model_validate({"executor": {"cascade": "sideways"}})
