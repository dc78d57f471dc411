"""Every node that was not decomposed, or not run, says why (``Node.reason``): the depth
limit, the sibling that decided its AND/OR group, the end of the episode, a budget."""

from __future__ import annotations

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.llm.testing import ScriptedModel
from tests.engine.test_controller import DONE, FAIL, plan
from tests.engine.toy import ToyEnv


async def run(executor: list[str], plans: list[str], **cfg: object) -> MemorySink:
    sink = MemorySink()
    await run_task(ToyEnv(), {"goal": "root goal"}, RunConfig(**cfg),
                   ScriptedModel(executor, "ex"), ScriptedModel(plans, "pl"), sink=sink)
    return sink


def reasons(sink: MemorySink) -> dict[int, str | None]:
    return {n.id: n.reason for n in sink.nodes.values()}


async def test_d_max_reached() -> None:
    sink = await run([FAIL], [], d_max=1)
    assert reasons(sink) == {1: "not decomposed: d_max reached (depth 1 of 1)"}


async def test_a_failed_and_step_skips_the_rest() -> None:
    sink = await run([FAIL, FAIL], [plan("a", "b", "c", order="(Step 1 AND Step 2 AND Step 3)")],
                     d_max=2)
    assert reasons(sink) == {1: None, 2: "not decomposed: d_max reached (depth 2 of 2)",
                             3: "skipped: an earlier AND step failed (node 2)",
                             4: "skipped: an earlier AND step failed (node 2)"}


async def test_a_succeeded_or_alternative_skips_the_others() -> None:
    sink = await run([FAIL, "ok a", DONE], [plan("a", "b", order="(Step 1 OR Step 2)")],
                     d_max=2)
    assert sink.nodes[2].status == "succeeded" and sink.nodes[2].reason is None
    assert reasons(sink)[3] == "skipped: an earlier OR alternative succeeded (node 2)"


async def test_the_end_of_the_episode_skips_what_is_left() -> None:
    sink = await run([FAIL, "win"], [plan("a", "b", order="(Step 1 AND Step 2)")], d_max=2)
    assert sink.nodes[2].status == "succeeded"
    assert reasons(sink)[3] == "skipped: the environment ended the episode"


async def test_nodes_a_budget_left_unrun_say_so() -> None:
    sink = await run([FAIL, "ok a"], [plan("a", "b", order="(Step 1 AND Step 2)")], d_max=2,
                     budget={"max_llm_calls": 3})
    assert sink.nodes[2].status == "failed" and "budget" in (sink.nodes[2].error or "")
    assert (sink.nodes[3].status, sink.nodes[3].reason) == (
        "skipped", "not run: budget exceeded: llm_calls (limit 3, spent 3)")


async def test_the_terminal_view_says_why_and_counts_in_words() -> None:
    from adapt.cli.liveview import node_label

    sink = await run([FAIL, "ok a", DONE], [plan("a", "b", order="(Step 1 OR Step 2)")], d_max=2)
    one_step = node_label(sink.nodes[1], sink).plain
    assert "(1 step," in one_step and "1 steps" not in one_step
    assert "(skipped: an earlier OR alternative succeeded (node 2))" in node_label(
        sink.nodes[3], sink).plain
