"""``adapt export otlp``'s core: a stored task's trace rebuilt from the database is the trace
the worker sent live (same ids, parents, names and attributes), and prompts go out only when
asked for, read through the store (real SQLite and PostgreSQL)."""

from __future__ import annotations

import json

from adapt.store import traces
from adapt.telemetry.history import rebuild
from tests.service.helpers import insert_task
from tests.service.test_execute import make_ctx
from tests.telemetry.test_resume import spans_of, traced
from tests.telemetry.treeutil import from_records


async def test_the_rebuilt_trace_is_the_live_one(database_url: str) -> None:
    from adapt.service.execute import execute_task

    ctx = make_ctx(database_url, "w1")
    memory = traced(ctx)
    task_id = await insert_task(ctx.sessions, config={"seed": 11})
    assert await execute_task(ctx, task_id) == "succeeded"
    live = {s.span_id: s for s in spans_of(ctx, memory)}
    history = await traces.task_history(ctx.sessions, task_id)
    assert history is not None
    rebuilt = {s.span_id: s for s in from_records(rebuild(history, content=False))}
    assert set(rebuilt) == set(live) and len(live) == 39
    for sid, span in live.items():
        assert (rebuilt[sid].parent_id, rebuilt[sid].name) == (span.parent_id, span.name)
        assert rebuilt[sid].attributes == span.attributes, span.name

    with_prompts = rebuild(history, content=True)
    first = next(s for s in with_prompts if s.attributes.get("adapt.llm.call_id") == 1)
    prompt, _ = traces.call_prompt(history, 1)
    assert prompt
    (message,) = json.loads(first.attributes["gen_ai.input.messages"])
    assert message["parts"][0]["content"] == prompt
    assert not any("gen_ai.input.messages" in s.attributes for s in rebuilt.values())
    await ctx.aclose()
