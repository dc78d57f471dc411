"""Forks of tasks on MCP servers (environments with side effects, ``adapt.envs.journal``).

- On a workspace (``replay``): the fork's first attempt replays the origin's calls before the
  node (none is paid again) and rebuilds a fresh copy of the workspace by sending the origin's
  recorded changes again (read-only calls are not sent), at the paths the replayed calls name;
  then the node runs live, and the registered check finds everything the origin and the fork
  wrote. Counted at the real npm filesystem server, behind the proxy that logs every call.
- Without a workspace (``journal``): a world outside adapt cannot be put back to the node, so a
  fork at a node the task acted at (or before a later action) is refused, 409, saying why.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapt.engine import RunConfig
from adapt.envs.mcp import MCPSettings, use_settings
from adapt.envs.mcp.grammar import action
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel
from adapt.service.errors import NotForkable
from adapt.service.execute import execute_task
from tests.service.helpers import insert_task, persisted_tree, task_row
from tests.service.test_execute import make_ctx
from tests.service.test_forks import Live, fingerprints, fork
from tests.support.mcp_servers import filesystem_spec, tiny_server_spec

pytest.importorskip("mcp")

ALLOWED = re.compile(r"Allowed directories:\n(\S+)")
ROOT_GOAL = "Write a.txt, b.txt and c.txt in the workspace."
PLAN = "Step 1: Write b.txt\nStep 2: Write c.txt\nExecution Order: (Step 1 AND Step 2)"
#: a model spec a task on mcp may name (the workers' model is the test's function model)
SCRIPT = 'script:{"executor": ["think: x"], "planner": ["Step 1: x\\nExecution Order: (Step 1)"]}'
CHECK = ("import os, sys; ws = os.environ['WS']; "
         "sys.exit(0 if all(os.path.isfile(os.path.join(ws, f)) for f in "
         "('a.txt', 'b.txt', 'c.txt')) else 1)")


def reply(request: ChatRequest) -> str:
    """A model that writes a.txt and gives up at the root, plans b.txt then c.txt, and writes
    each in its own node (finding the workspace with list_allowed_directories first)."""
    if request.role == "planner":
        return PLAN
    run = request.as_prompt().rsplit("\nTask: ", 1)[-1]
    found = ALLOWED.findall(run)
    if not found:
        return action("list_allowed_directories", {})
    ws = found[-1]
    name = "a.txt" if run.startswith(ROOT_GOAL) else "b.txt" if "b.txt" in run.split(
        "\n", 1)[0] else "c.txt"
    if f"Successfully wrote to {ws}/{name}" in run:
        done = "Task failed!" if name == "a.txt" else "Task completed!"
        return f"think: {name} is written. {done}"
    return action("write_file", {"path": f"{ws}/{name}", "content": f"{name}\n"})


@pytest.fixture
def files(tmp_path: Path) -> Iterator[tuple[MCPSettings, Path]]:
    template = tmp_path / "template"
    template.mkdir()
    (template / "readme.txt").write_text("an empty workspace\n")
    log = tmp_path / "calls.jsonl"
    settings = MCPSettings.model_validate({
        "servers": {"files": filesystem_spec(log=log)},
        "workspaces": {"empty": str(template)},
        "checks": {"three": {"command": [sys.executable, "-c", CHECK],
                             "env": {"WS": "{workspace}"}}},
        "work_dir": str(tmp_path / "episodes")})
    with use_settings(settings):
        yield settings, log


def forwarded(log: Path) -> list[tuple[str, dict[str, Any]]]:
    if not log.exists():
        return []
    return [(c["tool"], c.get("arguments") or {})
            for c in map(json.loads, log.read_text().splitlines())]


async def test_a_fork_rebuilds_the_workspace_and_pays_nothing_before_the_node(
        database_url: str, files: tuple[MCPSettings, Path]) -> None:
    _, log = files
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    config = {"server": "files", "workspace": "empty", "check": "three", "task": ROOT_GOAL}
    origin = await insert_task(ctx.sessions, environment="mcp", config=config, model=SCRIPT,
                               run_config=RunConfig(d_max=2))
    roots = {"path_roots": [str(log.parent)]}
    ctx = make_ctx(database_url, "w1", FunctionModel(reply), **roots)
    try:
        assert await execute_task(ctx, origin) == "succeeded"
    finally:
        await ctx.aclose()
    row = await task_row(ctx.sessions, origin)
    assert row.reward == 1.0, "the check found the three files"
    tree = await persisted_tree(ctx.sessions, origin)
    c_node = next(i for i, n in tree["nodes"].items() if n["goal"] == "Write c.txt")
    sent_by_origin = forwarded(log)
    assert [t for t, _ in sent_by_origin].count("write_file") == 3
    log.unlink()

    recorded = await fingerprints(ctx, origin)
    forked = await fork(ctx, origin, c_node)
    assert forked.fork_calls is not None and 0 < forked.fork_calls < len(recorded)
    # a second fork would rebuild the same folder while the first one runs: refused
    with pytest.raises(NotForkable, match=f"fork {forked.id} of the same task"):
        await fork(ctx, origin, c_node)
    live = Live(FunctionModel(reply))
    ctx = make_ctx(database_url, "w2", live, **roots)
    try:
        assert await execute_task(ctx, forked.id) == "succeeded"
    finally:
        await ctx.aclose()
    fork_row = await task_row(ctx.sessions, forked.id)
    assert fork_row.reward == 1.0, "the fork's workspace had a.txt and b.txt back, and c.txt"
    # nothing before the node was paid again: every live call is one of the node's
    assert live.asked and not set(live.asked) & set(recorded[:forked.fork_calls])
    assert len(live.asked) == len(recorded) - forked.fork_calls
    # the fresh copy got the origin's changes before the node again (at the same paths),
    # not its read-only calls; then the node's own calls, live
    sent = forwarded(log)
    writes = [a["path"].rsplit("/", 1)[-1] for t, a in sent if t == "write_file"]
    assert writes == ["a.txt", "b.txt", "c.txt"]
    origin_paths = {a["path"] for t, a in sent_by_origin if t == "write_file"}
    assert {a["path"] for t, a in sent if t == "write_file"} == origin_paths
    assert [t for t, _ in sent].count("list_allowed_directories") == 1, "only the node's"
    # with no overrides, the fork grows the origin's tree again
    assert await persisted_tree(ctx.sessions, forked.id) == tree
    # once it has finished, the task (or the fork) can be forked again
    again = await fork(ctx, forked.id, c_node)
    assert again.forked_from == {"task_id": forked.id, "node_id": c_node}
    # a fork of the fork replays the fork's record, at the paths of the chain's first task
    log.unlink()
    live = Live(FunctionModel(reply))
    ctx = make_ctx(database_url, "w3", live, **roots)
    try:
        assert await execute_task(ctx, again.id) == "succeeded"
    finally:
        await ctx.aclose()
    assert (await task_row(ctx.sessions, again.id)).reward == 1.0
    assert len(live.asked) == len(recorded) - forked.fork_calls
    assert {a["path"] for t, a in forwarded(log) if t == "write_file"} == origin_paths


def journal_reply(request: ChatRequest) -> str:
    """Notes one thing at the root and gives up; plans two notes; each node notes its own."""
    if request.role == "planner":
        return "Step 1: Note two\nStep 2: Note three\nExecution Order: (Step 1 AND Step 2)"
    run = request.as_prompt().rsplit("\nTask: ", 1)[-1]
    word = "one" if run.startswith("Take notes") else run.split("\n", 1)[0].split()[-1]
    if f"noted: {word}" in run:
        return f"think: noted {word}. " + ("Task failed!" if word == "one" else "Task completed!")
    return action("note", {"text": word})


async def test_a_fork_of_a_journal_environment_is_refused_where_it_cannot_be_rebuilt(
        database_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "world"
    folder.mkdir()
    settings = MCPSettings(servers={"tiny": tiny_server_spec(str(folder))},
                           work_dir=tmp_path / "episodes")
    with use_settings(settings):
        ctx = make_ctx(database_url, "w0")
        await ctx.aclose()
        origin = await insert_task(ctx.sessions, environment="mcp",
                                   config={"server": "tiny", "task": "Take notes"},
                                   model=SCRIPT, run_config=RunConfig(d_max=2))
        ctx = make_ctx(database_url, "w1", FunctionModel(journal_reply))
        try:
            assert await execute_task(ctx, origin) == "succeeded"
        finally:
            await ctx.aclose()
        assert (folder / "notes.txt").read_text() == "one\ntwo\nthree\n"
        tree = await persisted_tree(ctx.sessions, origin)
        three = next(i for i, n in tree["nodes"].items() if n["goal"] == "Note three")
        for node_id, later in ((1, 3), (three, 1)):
            with pytest.raises(NotForkable) as refused:
                await fork(ctx, origin, node_id)
            error = refused.value
            assert error.status == 409 and error.problem_type == "not-forkable"
            message = str(error)
            assert "resumes by journal" in message and f"took {later} action(s)" in message
            assert '"note"' in message and "workspace" in message
        assert (folder / "notes.txt").read_text() == "one\ntwo\nthree\n"
