"""InterCode and StateFlow submit at the turn limit and score the last result (both profiles):
with scripted models and the real MariaDB databases."""

from __future__ import annotations

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.intercode_sql import InterCodeSQL
from adapt.llm.testing import ScriptedModel

TASK = {
    "db": "poker_player",
    "question": "How many poker players are there?",
    "gold": "SELECT count(*) FROM poker_player",
}


async def run(env: InterCodeSQL, replies: list[str], **config: object) -> tuple[float, MemorySink]:
    sink = MemorySink()
    cfg = RunConfig(strategy="react", d_max=1, **config)  # type: ignore[arg-type]
    result = await run_task(env, TASK, cfg, ScriptedModel(replies), sink=sink)
    return result.reward, sink


async def test_the_last_result_is_submitted_at_the_turn_limit(env: InterCodeSQL) -> None:
    reward, sink = await run(env, ["execute[SHOW TABLES]", f"execute[{TASK['gold']}]"],
                             executor={"max_steps": 2})
    assert reward == 1.0
    steps = sink.steps[1]
    assert [s.text for s in steps] == ["execute[SHOW TABLES]", f"execute[{TASK['gold']}]",
                                       "submit"]
    assert steps[-1].extra == {"final": True} and steps[-1].done and steps[-1].reward == 1.0


async def test_a_wrong_last_result_scores_what_it_is_worth(env: InterCodeSQL) -> None:
    reward, sink = await run(env, ["execute[SELECT count(*) FROM people]"],
                             executor={"max_steps": 1})
    assert reward == 0.0
    assert [s.text for s in sink.steps[1]][-1] == "submit"


async def test_no_second_submit_after_the_agent_submitted(env: InterCodeSQL) -> None:
    reward, sink = await run(env, [f"execute[{TASK['gold']}]", "submit"],
                             executor={"max_steps": 5})
    assert reward == 1.0
    assert [s.text for s in sink.steps[1]] == [f"execute[{TASK['gold']}]", "submit"]
    assert all(s.extra is None or not s.extra.get("final") for s in sink.steps[1])
