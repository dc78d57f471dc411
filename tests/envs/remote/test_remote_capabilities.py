"""Optional capabilities over adapt's environment protocol: rolling failed sub-tasks back
(checkpoints and rollbacks are numbered changes, replayed with the rest) and actions declared
as tools (the declarations come with the session, a call's action from the server)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs import registry
from adapt.envs.base import Environment, undoable
from adapt.envs.remote import RemoteSpec, install, remote_policy
from adapt.envs.textcraft import TextCraft
from adapt.envs.tools import DeclaresTools, ToolCallError, ToolSpec, declared_tools
from adapt.envserve import create_app
from adapt.sim import from_spec
from tests.engine.toy import ToyEnv
from tests.support.envserver import serve_app


class RollingTextCraft(TextCraft):
    """TextCraft whose failed sub-tasks are undone (as ADaPT's ALFWorld runs are)."""

    name = "rolling"

    def rolls_back(self) -> bool:
        return True

    def checkpoint(self) -> object:
        return (dict(self._inventory), dict(self._produced))

    def rollback(self, mark: Any) -> None:
        self._inventory, self._produced = dict(mark[0]), dict(mark[1])


class ToolCraft(TextCraft):
    """TextCraft whose ``get`` is also a tool."""

    name = "toolcraft"

    def tools(self) -> Sequence[ToolSpec]:
        return [ToolSpec("get", "fetch a base material", {
            "type": "object", "properties": {"count": {"type": "integer"},
                                             "item": {"type": "string"}},
            "required": ["count", "item"]}, idempotent=False)]

    def tool_action(self, name: str, arguments: Mapping[str, Any]) -> str:
        if name != "get" or not isinstance(arguments.get("count"), int):
            raise ToolCallError(f"{name}: give count (an integer) and item")
        return f"get {arguments['count']} {arguments['item']}"


def served(env_class: type[Environment], url: str) -> type[Environment]:
    install([RemoteSpec(env_class.name, url)], remote_policy(["127.0.0.1/32"]))
    return registry.get(env_class.name)


async def _tree(env: Environment) -> tuple[str, dict[str, Any]]:
    sink = MemorySink()
    try:
        result = await run_task(env, {"seed": 11}, RunConfig(d_max=4), from_spec(
            "sim:textcraft?capability=1"), sink=sink)
    finally:
        env.close()
    return result.status, {"nodes": {i: n.model_dump(mode="json") for i, n in sink.nodes.items()},
                           "steps": {i: [s.model_dump(mode="json") for s in ss]
                                     for i, ss in sink.steps.items()}}


def test_rollbacks_over_http_give_the_in_process_tree_even_when_the_session_is_lost() -> None:
    app = create_app(RollingTextCraft)
    with serve_app(app) as url:
        remote_class = served(RollingTextCraft, url)
        want = asyncio.run(_tree(RollingTextCraft()))
        env = remote_class()
        assert asyncio.run(_tree(env)) == want
        lossy = remote_class()
        original = lossy.checkpoint

        taken: list[object] = []

        def checkpoint_and_lose() -> object:
            taken.append(original())
            if len(taken) == 3:
                app.state.store.close_all()  # the journal holds steps and checkpoints
            return taken[-1]

        lossy.checkpoint = checkpoint_and_lose  # type: ignore[method-assign]
        assert asyncio.run(_tree(lossy)) == want
        assert app.state.store.counters.created == 3  # two runs, one session started again
        fresh = remote_class()
        fresh.reset(seed=11)
        assert undoable(fresh) is fresh
        fresh.close()


def test_tools_come_with_the_session_and_their_actions_from_the_server() -> None:
    with serve_app(create_app(ToolCraft)) as url:
        env = served(ToolCraft, url)()
        env.reset(goal="craft stick")
        assert isinstance(env, DeclaresTools)
        tools = declared_tools(env)
        assert tools == ToolCraft().tools()
        assert env.tool_action("get", {"count": 2, "item": "bamboo"}) == "get 2 bamboo"
        with pytest.raises(ToolCallError, match="give count"):
            env.tool_action("get", {"item": "bamboo"})
        env.close()
    assert not isinstance(ToyEnv(), DeclaresTools)
    with serve_app(create_app(ToyEnv)) as url:  # no tools: no tool members
        assert not isinstance(served(ToyEnv, url)(), DeclaresTools)
