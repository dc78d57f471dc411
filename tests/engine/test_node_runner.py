"""One node runner under every strategy (issue 35, item 1): strategies drive nodes through
``NodeRunner``; per-run choices (model, watch) travel in ``ExecuteOptions``; reward and the end
of the episode come back in ``ExecutionResult`` and only the run folds them into its state."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import adapt.engine
from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.base import ExecuteOptions, ExecutionResult
from adapt.engine.executors.registry import EXECUTORS
from adapt.engine.runtime import Run
from adapt.engine.tree import Node
from adapt.llm.testing import ScriptedModel
from tests.engine.toy import ToyEnv

ENGINE = Path(adapt.engine.__file__).parent


def _is_run(expr: ast.expr) -> bool:
    """``run``, ``self.run``, ``episode.run``, ..."""
    return ((isinstance(expr, ast.Name) and expr.id == "run")
            or (isinstance(expr, ast.Attribute) and expr.attr == "run"))


def _runs_field(target: ast.expr) -> bool:
    """Whether assigning to ``target`` changes a run: ``run.x``, ``self.run.x``,
    ``episode.run.x[...]`` and the like."""
    node: ast.expr = target
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute) and _is_run(node.value):
            return True
        node = node.value
    return False


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from (target.elts if isinstance(target, ast.Tuple) else [target])
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        yield node.target
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id in ("setattr", "delattr") and node.args and _is_run(node.args[0])):
        yield ast.Attribute(value=node.args[0], attr="?", ctx=ast.Store())


def test_only_the_run_itself_changes_its_fields() -> None:
    """Executors, the node runner, strategies, planning and ``run_task`` read the run and
    call its methods; none assigns to its fields (the runtime module is the one owner)."""
    offenders: list[str] = []
    for path in sorted(ENGINE.rglob("*.py")):
        if path == ENGINE / "runtime.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            for target in _targets(node):
                if _runs_field(target):
                    offenders.append(f"{path.relative_to(ENGINE)}:{node.lineno}: "
                                     f"{ast.unparse(node).splitlines()[0]}")
    assert offenders == []


def test_the_runs_episode_state_is_read_only_and_folded_by_the_run(env: ToyEnv) -> None:
    run = Run(env, RunConfig(), [ScriptedModel([], "a"), ScriptedModel([], "b")])
    for name, value in (("reward", 1.0), ("episode_done", True), ("context", "x"),
                        ("executor_model", ScriptedModel([]))):
        with pytest.raises(AttributeError):
            setattr(run, name, value)
    assert run.executor_model.name == "a"
    run.fold(0.5, False)
    run.fold(-1.0, True)  # a lower reward never lowers the best one
    assert (run.reward, run.episode_done) == (0.5, True)
    run.carry("Done: a")
    assert run.context == "Done: a"
    run.restart_episode()  # a trial: the task's best reward stays
    assert (run.reward, run.episode_done, run.context) == (0.5, False, None)


def test_no_strategy_but_adapt_builds_or_extends_the_adapt_controller() -> None:
    offenders: list[str] = []
    for path in sorted((ENGINE / "strategies").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, ast.ClassDef) and any(
                    ast.unparse(b).endswith("AdaptController") for b in fn.bases):
                offenders.append(f"{path.name}: class {fn.name} extends AdaptController")
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for call in ast.walk(fn):
                if (isinstance(call, ast.Call) and ast.unparse(call.func).endswith(
                        "AdaptController") and fn.name != "adapt_strategy"):
                    offenders.append(f"{path.name}: {fn.name} builds AdaptController")
    assert offenders == []


@dataclass
class Outcome:
    action: str
    success: bool


@dataclass
class ReportingExecutor:
    """A plug-in executor with its own ``execute`` (no shared episode): one action per run,
    whose reward and end it reports in its result."""

    run: Run
    script: list[Outcome]
    seen: list[ExecuteOptions | None] = field(default_factory=list)

    async def execute(self, node: Node, task: str,
                      options: ExecuteOptions | None = None) -> ExecutionResult:
        self.seen.append(options)
        outcome = self.script.pop(0)
        step = self.run.env.step(outcome.action)
        return ExecutionResult(outcome.success, None, float(step.reward), "done", 1,
                               done=step.done)


@dataclass
class Reporting:
    """The executors the ``reporting`` kind built, and the outcomes they play, in order."""

    script: list[Outcome] = field(default_factory=list)
    made: list[ReportingExecutor] = field(default_factory=list)


@pytest.fixture
def reporting() -> Iterator[Reporting]:
    out = Reporting()

    def factory(run: Run, **_: object) -> ReportingExecutor:
        out.made.append(ReportingExecutor(run, out.script))
        return out.made[-1]

    EXECUTORS.register("reporting", factory)
    try:
        yield out
    finally:
        EXECUTORS.unregister("reporting")


async def test_reward_and_the_end_of_the_episode_come_back_in_the_result(
        env: ToyEnv, reporting: Reporting) -> None:
    """An executor's reported reward is the task's, and its reported end of the episode stops
    ADaPT from planning (the planner has no reply: a planner call would fail the test)."""
    reporting.script.append(Outcome("win", False))  # ended with a reward, no claim of success
    sink = MemorySink()
    planner = ScriptedModel([], "planner")
    result = await run_task(env, {}, RunConfig(d_max=3, executor={"kind": "reporting"}),
                            ScriptedModel([], "executor"), planner, sink=sink)
    assert result.reward == 1.0 and not planner.requests
    assert [n.status for n in sink.nodes.values()] == ["failed"]


async def test_a_cascade_attempt_names_its_model_in_the_options(
        env: ToyEnv, reporting: Reporting) -> None:
    """Each cascade attempt gets its model in ``ExecuteOptions.model`` (the run's default
    model is never switched), and the watched node is the attempt's."""
    reporting.script.extend([Outcome("ok a", False), Outcome("ok b", True)])
    weak, strong = ScriptedModel([], "weak"), ScriptedModel([], "strong")
    result = await run_task(env, {}, RunConfig(strategy="react",
                                               executor={"kind": "reporting"}),
                            [weak, strong])
    (executor,) = reporting.made
    assert [o.model.name for o in executor.seen if o is not None and o.model is not None] \
        == ["weak", "strong"]
    assert [o.watch.node_id for o in executor.seen if o is not None and o.watch is not None] \
        == [2, 3]  # attempt 1 and attempt 2, the root's children
    assert result.success
