"""Forks: a new task that re-runs a finished task up to one of its nodes from the recorded
calls (paying for none of them), then goes on live with other settings (``POST
/tasks/{id}/fork``).

The history before the node is every call the task made before the first call of the node or
of a node under it. The fork is submitted like any task (its models and settings checked and
resolved the same way), with the origin's environment, config and goal and the origin's run
config with ``overrides`` laid over it, and it records where it comes from
(``forked_from_task``, ``forked_from_node``, ``fork_calls``). Its first attempt replays the
origin's calls before the fork point (``adapt.service.attempt``): the environment is rebuilt
by replaying the actions they led to, and everything after runs live. With no overrides the
fork's tree is the origin's.

An environment with side effects (``adapt.envs.journal``) gets the origin's action steps
before the fork point as its history, under the key of the task the chain of forks starts
from (the paths the replayed calls name stay the same). One that resumes by ``replay`` (an MCP
server on a workspace copy) rebuilds its world from them. One that resumes by ``journal`` (an
MCP server without a workspace: a world outside adapt) cannot put back what the origin did
after the node, so such a fork is refused (``NotForkable``, 409) unless the origin took no
action from the fork point on. Two forks sharing a key cannot run at once (the same folder):
a fork while another fork of the same chain is unfinished is refused too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine.config import RunConfig
from adapt.engine.tree import FINAL_STATUSES
from adapt.envs import registry
from adapt.envs.journal import resume_mode
from adapt.service.errors import InvalidField, NotForkable, TaskActive
from adapt.service.submit import ForkOrigin, ModelRequest, Submission, Submitted, submit_task
from adapt.settings import Settings
from adapt.store.journal import fork_root, split_steps
from adapt.store.models import LLMCallRow, NodeRow, Task

#: what a fork may change: the run config's fields (models by spec, as a task names them)
MODEL_FIELDS = {"executor": ("model", "models"), "planner": ("model",)}


async def fork_point(session: AsyncSession, task_id: str, node_id: int) -> int:
    """How many of ``task_id``'s calls come before ``node_id`` (the first call of the node or
    of a node under it; all of them when that subtree made none). ``InvalidField`` for a
    node the task does not have."""
    rows = (await session.execute(select(NodeRow.id, NodeRow.parent_id).where(
        NodeRow.task_id == task_id))).all()
    parents = {int(r[0]): r[1] for r in rows}
    if node_id not in parents:
        raise InvalidField("node_id", f"task {task_id} has no node {node_id}")
    subtree = {node_id}
    for nid in sorted(parents):  # a child's id is larger than its parent's
        if parents[nid] in subtree:
            subtree.add(nid)
    first = (await session.execute(select(func.min(LLMCallRow.id)).where(
        LLMCallRow.task_id == task_id, LLMCallRow.node_id.in_(sorted(subtree))))).scalar()
    if first is not None:
        return int(first) - 1
    total = (await session.execute(select(func.count()).select_from(LLMCallRow).where(
        LLMCallRow.task_id == task_id))).scalar_one()
    return int(total)


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def forked_config(source: Task, overrides: Mapping[str, Any]) -> tuple[RunConfig, ModelRequest]:
    """The origin's run config with ``overrides`` over it, and the models to run
    (``InvalidField`` naming ``overrides.<field>`` for a bad override)."""
    stored = dict(source.run_config or {})
    models = stored.pop("models", None) or {}
    over = {k: dict(v) if isinstance(v, Mapping) else v for k, v in overrides.items()}
    chosen: dict[str, Any] = {}
    for section, names in MODEL_FIELDS.items():
        part = over.get(section)
        if isinstance(part, dict):
            for name in names:
                if name in part:
                    chosen[f"{section}.{name}"] = part.pop(name)
    try:
        config = RunConfig.model_validate(_merged(stored, over))
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in ("overrides", *error["loc"]))
        raise InvalidField(field, error["msg"]) from None
    executors = list(models.get("executor") or [source.executor_model])
    executor = chosen.get("executor.model")
    cascade = chosen.get("executor.models")
    if executor is None and cascade is None:
        executor, cascade = executors[0], executors if len(executors) > 1 else []
    planner = chosen.get("planner.model") or models.get("planner") or source.planner_model
    if not isinstance(cascade, list | tuple):
        cascade = []
    return config, ModelRequest(executor=executor, cascade=tuple(cascade), planner=planner)


async def fork_task(session: AsyncSession, settings: Settings, tenant: str, source: Task,
                    node_id: int, overrides: Mapping[str, Any]) -> Submitted:
    """Submit the fork of ``source`` at ``node_id`` (the caller dispatches it). A task that
    has not finished is ``TaskActive`` (its history is still being written)."""
    if not source.finished:
        raise TaskActive(source.id, source.status, "forked")
    calls = await fork_point(session, source.id, node_id)
    config, models = forked_config(source, overrides)
    await check_rebuildable(session, source, node_id, calls)
    sub = Submission(environment=source.environment,
                     environment_config=dict(source.environment_config or {}),
                     run_config=config, goal=source.goal, models=models,
                     fork=ForkOrigin(source.id, node_id, calls))
    return await submit_task(session, settings, tenant, sub)


async def check_rebuildable(session: AsyncSession, source: Task, node_id: int,
                            calls: int) -> None:
    """Refuse (``NotForkable``) a fork whose environment cannot be rebuilt at the node: a
    ``journal`` environment the origin acted on from the fork point on, or one whose folder
    another unfinished fork of the same chain holds."""
    mode = resume_mode(registry.get(source.environment), source.environment_config or {})
    if mode is None:  # a deterministic world: replaying the actions rebuilds it
        return
    if mode == "journal":
        _, later = await split_steps(session, source.id, calls)
        if later:
            raise NotForkable(
                f"task {source.id} cannot be forked at node {node_id}: its environment "
                f"({source.environment}) resumes by journal (a world outside adapt, e.g. an "
                "MCP server without a workspace), so a fork cannot rebuild it as it was at the "
                f"node: the task took {len(later)} action(s) there or later that may have "
                f"changed it (the first: {later[0].action.strip()[:200]}). Fork it at a node "
                "after its last action, or run it on a workspace (environment_config."
                "workspace), whose fresh copy a fork rebuilds by replaying the actions")
    root = await fork_root(session, source.id)
    running = await _unfinished_forks(session, root)
    if running:
        raise NotForkable(
            f"task {source.id} cannot be forked now: fork {running[0]} of the same task "
            f"({root}) has not finished, and forks of an environment with side effects "
            f"({source.environment}) rebuild it in the same folder; try again when it has "
            f"finished, or cancel it (POST /tasks/{running[0]}/cancel)")


async def _unfinished_forks(session: AsyncSession, root: str) -> list[str]:
    """The unfinished tasks whose chain of forks starts at ``root`` (``root`` too: a resumed
    task runs in that folder as well)."""
    candidates = (await session.execute(select(Task.id).where(
        or_(Task.forked_from_task.is_not(None), Task.id == root),
        Task.status.not_in(sorted(FINAL_STATUSES))))).scalars().all()
    return [c for c in candidates if await fork_root(session, c) == root]
