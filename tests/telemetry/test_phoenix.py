"""Against a real backend: Arize Phoenix (the ``phoenix`` extra) in a subprocess, ``adapt serve``
with export on, a README-style task (TextCraft seed 11, ADaPT d_max 4, the simulated model); the
spans are read back from Phoenix's REST API and their tree and attributes compared with the
API's tree. Then ``adapt export otlp`` sends a task that ran with export off, and it arrives as
the same tree. The browser photographs the trace (docs/img/phoenix-trace.png comes from
``python -m tests.telemetry.screenshots``). Skipped without Phoenix; CI installs it and fails
rather than skip."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapt.service.execute import ServiceContext, execute_task
from adapt.settings import Settings
from adapt.telemetry.spans import span_id, trace_id
from tests.service.helpers import insert_task
from tests.telemetry import phoenix as px
from tests.telemetry.treeutil import Flat, structure
from tests.ui.harness import chromium_path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[px.Phoenix]:
    if not px.installed():
        why = "Arize Phoenix is not installed: pip install -e '.[phoenix]'"
        if os.environ.get("CI"):
            pytest.fail(why)  # .ci/run installs it: missing there is a failure
        pytest.skip(why)
    phoenix = px.Phoenix(tmp_path_factory.mktemp("phoenix"))
    started = time.monotonic()
    phoenix.start()
    print(f"Phoenix up in {time.monotonic() - started:.1f}s")
    yield phoenix
    phoenix.stop()


def walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node["children"]:
        yield from walk(child)


def test_a_task_appears_in_phoenix_as_the_apis_tree(
    backend: px.Phoenix, tmp_path: Path
) -> None:
    started = time.monotonic()
    server = px.serve_with_export(tmp_path / "serve", backend, "adapt-live")
    try:
        task = px.run_task(server)
        tree = httpx.get(f"{server.url}/tasks/{task['id']}/tree", timeout=10).json()["tree"]
        nodes = {n["id"]: {**n, **httpx.get(  # with its plan, steps and calls
            f"{server.url}/tasks/{task['id']}/nodes/{n['id']}", timeout=10).json()}
                 for n in walk(tree)}
    finally:
        server.stop()
    assert task["status"] == "succeeded"
    task_id = task["id"]
    plans = [n for n in nodes.values() if n.get("plan")]
    calls = task["usage"]["llm_calls"]
    actions = sum(1 for n in nodes.values() for s in n.get("steps", []) if s["kind"] == "action")
    expected = 1 + len(nodes) + len(plans) + calls + actions

    got = backend.wait_for_trace("adapt-live", f"{trace_id(task_id):032x}", expected)
    print(f"{len(got)} spans in Phoenix {time.monotonic() - started:.1f}s after the start")
    spans = [px.flat(s) for s in got]
    assert len(spans) == len({s.span_id for s in spans}) == expected, "missing or repeated"
    by_id = {s.span_id: s for s in spans}
    kinds = {s["span_kind"] for s in got}
    assert kinds >= {"AGENT", "CHAIN", "LLM", "TOOL"}  # Phoenix's icons

    (root,) = [s for s in spans if s.parent_id is None]
    assert root.name == "invoke_workflow adapt"
    assert root.attributes["gen_ai.conversation.id"] == task_id
    assert root.attributes["adapt.d_max"] == 4 and root.attributes["adapt.tenant"] == "default"
    assert root.attributes["adapt.task.status"] == "succeeded"

    node_spans = {s.attributes["adapt.node.id"]: s for s in spans
                  if s.name.startswith(("invoke_agent", "and group", "or group"))}
    assert set(node_spans) == set(nodes)
    for node_id, node in nodes.items():  # the API's tree, parent by parent
        span = node_spans[node_id]
        assert span.span_id == span_id(task_id, f"node:{node_id}")
        parent = node.get("parent_id")
        assert span.parent_id == (root.span_id if parent is None
                                  else node_spans[parent].span_id)
        a = span.attributes
        assert (a["adapt.node.depth"], a["adapt.node.status"], a["adapt.node.goal"]) == (
            node["depth"], node["status"], node["goal"])
        assert a.get("adapt.node.claim") == node.get("claim")
        assert a.get("adapt.node.verdict") == node.get("verdict")
    for node in plans:
        (plan,) = [s for s in spans if s.name == "plan react"
                   and s.parent_id == node_spans[node["id"]].span_id]
        assert plan.attributes["adapt.plan.expression"] == node["plan"]["expression_text"]
        assert plan.attributes["adapt.plan.steps"] == len(node["plan"]["steps"])
        (planner_call,) = [s for s in spans if s.parent_id == plan.span_id]
        assert planner_call.name.startswith("text_completion ")
    llm = {s.attributes["adapt.llm.call_id"]: s for s in spans
           if s.name.startswith("text_completion ")}
    assert len(llm) == calls
    for node_id, node in nodes.items():
        for call in node["llm_calls"]:
            holder = by_id[llm[call["id"]].parent_id]
            assert holder.attributes["adapt.node.id"] == node_id
            assert holder.name == ("plan react" if call["role"] == "planner"
                                   else "invoke_agent react")
        tools = [s for s in spans if s.name == "execute_tool textcraft"
                 and s.parent_id == node_spans[node_id].span_id]
        assert len(tools) == sum(1 for st in node["steps"] if st["kind"] == "action")
    llm = list(llm.values())  # type: ignore[assignment]
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in llm) == \
        task["usage"]["prompt_tokens"]  # type: ignore[attr-defined]

    chromium = chromium_path()
    if chromium is not None:  # the picture the docs show, taken from this run's trace
        shot = tmp_path / "phoenix-trace.png"
        px.screenshot(backend, "adapt-live", f"{trace_id(task_id):032x}", shot, chromium)
        assert shot.stat().st_size > 20_000
    elif os.environ.get("CI"):
        pytest.fail("no Chromium for the Phoenix screenshot")


async def test_adapt_export_otlp_sends_a_stored_task_as_the_same_tree(
    backend: px.Phoenix, tmp_path: Path
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'adapt.db'}"
    from adapt.store.migrate import upgrade

    await asyncio.to_thread(upgrade, url)  # (alembic runs its own event loop)
    ctx = ServiceContext.create(Settings.model_validate({"ADAPT_DATABASE_URL": url}))
    assert ctx.telemetry is None  # this run exports nothing itself
    task_id = await insert_task(ctx.sessions, config={"seed": 11})
    assert await execute_task(ctx, task_id) == "succeeded"
    await ctx.aclose()

    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADAPT_"))},
           "ADAPT_DATABASE_URL": url, **backend.export_env("adapt-export")}
    adapt = [sys.executable, "-m", "adapt.cli", "export", "otlp"]
    out = subprocess.run([*adapt, task_id], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "sent 39 span(s) of 1 task(s)" in out.stderr
    exported = [px.flat(s) for s in backend.wait_for_trace(
        "adapt-export", f"{trace_id(task_id):032x}", 39)]

    from tests.telemetry.test_spans import traced_run  # the same task's spans, made live

    _, live = await traced_run()
    assert structure(exported) == structure(
        Flat(s.span_id, s.parent_id, s.name, s.attributes) for s in live)

    since = subprocess.run([*adapt, "--since", "2000-01-01"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert since.returncode == 0 and "of 1 task(s)" in since.stderr, since.stderr
    missing = subprocess.run([*adapt, "nope"], capture_output=True, text=True, env=env,
                             timeout=120)
    assert missing.returncode == 1 and "skipped" in missing.stderr
    unset = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    off = subprocess.run([*adapt, task_id], capture_output=True, text=True, env=unset,
                         timeout=120)
    assert off.returncode == 2 and "OTEL_EXPORTER_OTLP_ENDPOINT" in off.stderr
