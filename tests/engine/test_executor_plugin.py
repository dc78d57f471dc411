"""A plug-in executor, registered for real through an ``adapt.executors`` entry point.

The plug-in is a package with its ``.dist-info`` (what pip writes) on ``sys.path``, so
``importlib.metadata`` finds its entry point as it would after ``pip install``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from adapt.engine import MemorySink, RunConfig, available_executors, run_task
from adapt.engine.executors.registry import EXECUTORS
from adapt.llm.testing import ScriptedModel
from tests.engine.toy import ToyEnv

PLUGIN = '''
from adapt.engine.executors.episode import EpisodeExecutor, Turn, declaration


class OneShot(EpisodeExecutor):
    """Sends the model's one line to the environment, then says it is done."""

    async def turns(self, episode):
        from adapt.llm.base import ChatRequest

        run = self.run
        request = ChatRequest(prompt=f"Task: {episode.task}\\n> ", role="executor")
        response = await run.call(run.executor_model, request, episode.node)
        result = run.env.step(response.text.strip())
        step = episode.step(kind="action", raw=response.text, text=response.text.strip(),
                            observation=result.observation, reward=float(result.reward),
                            done=result.done)
        yield Turn([step])
        yield Turn([episode.step(kind="thought", raw="", text="think: Task completed!",
                                 observation="OK.")], declared=declaration("Task completed!"))
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    site = tmp_path / "site"
    (site / "oneshot_executor").mkdir(parents=True)
    (site / "oneshot_executor" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "oneshot_executor-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: oneshot-executor\n"
                                   "Version: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[adapt.executors]\noneshot = "
                                           "oneshot_executor:OneShot\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    EXECUTORS.refresh()
    yield "oneshot"
    monkeypatch.undo()
    EXECUTORS.refresh()


def test_an_unknown_kind_is_rejected_with_the_available_ones() -> None:
    with pytest.raises(ValidationError, match="unknown executor kind 'oneshot'; available: "
                       "react, stateact, stateflow, spec"):
        RunConfig(executor={"kind": "oneshot"})


async def test_a_plugin_executor_is_selected_by_its_kind(plugin: str, env: ToyEnv) -> None:
    assert plugin in available_executors()
    sink = MemorySink()
    config = RunConfig(d_max=1, executor={"kind": plugin})
    result = await run_task(env, {}, config, ScriptedModel(["ok a"]), sink=sink)
    node = sink.nodes[1]
    assert env.actions == ["ok a"]
    assert [s.text for s in sink.steps[1]] == ["ok a", "think: Task completed!"]
    assert (node.termination, node.self_assessed, result.success) == ("completed", True, True)
