"""``run_task``: the one entry point that runs a task with a strategy and reports the result."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from adapt.engine.approvals import ApprovalGate
from adapt.engine.claim_checks import final_verdict
from adapt.engine.config import ResolvedConfig, RunConfig
from adapt.engine.events import EventReceiver, TaskFinished, TreeSink
from adapt.engine.experience import ExperienceLibrary
from adapt.engine.resolve import resolve_config
from adapt.engine.runtime import CancelCheck, PriceFn, Run
from adapt.engine.strategies import get_strategy
from adapt.engine.tree import FinalStatus, Node, NodeStatus, Step, TaskResult
from adapt.envs.base import (
    Environment,
    env_call,
    final_action,
    start_episode_async,
    step_async,
    validate_config,
)
from adapt.errors import (
    AdaptError,
    BudgetError,
    CancelledByUser,
    TaskInterrupted,
    UserError,
)
from adapt.llm.base import ChatModel

log = logging.getLogger(__name__)


def _resolved(
    config: RunConfig, env: Environment, env_config: BaseModel | Mapping[str, Any]
) -> tuple[ResolvedConfig, BaseModel]:
    """The resolved config and the validated environment config: a ``ResolvedConfig`` as it
    is; a ``RunConfig`` resolved here (a library caller's)."""
    if isinstance(env_config, BaseModel):
        env_config = validate_config(env, env_config)
    resolved, merged = resolve_config(config, env, env_config)
    return resolved, validate_config(env, merged)


async def run_task(
    env: Environment,
    env_config: BaseModel | Mapping[str, Any],
    config: RunConfig,
    executor_model: ChatModel | Sequence[ChatModel],
    planner_model: ChatModel | None = None,
    *,
    goal: str | None = None,
    sink: TreeSink | EventReceiver | None = None,
    cancel: CancelCheck | None = None,
    price: PriceFn | None = None,
    approvals: ApprovalGate | None = None,
    library: ExperienceLibrary | None = None,
) -> TaskResult:
    """Start an episode of ``env`` with ``env_config`` and run one task; emits events to
    ``sink``.

    ``config``: a ``ResolvedConfig`` runs as it is (the service's stored one, ``adapt run``'s);
    a ``RunConfig`` is resolved here first (``resolve_config``: the profile's settings where it
    set none). ``env_config`` is validated against the environment's ``config_model`` here,
    once, unless it is already such a model (validated at the edge, e.g.
    ``registry.validate_config``).

    ``executor_model``: one model, or the cascade (``executor.models``) in order.

    ``approvals``: where the decisions come from when ``config.approval`` asks a person
    (``adapt.engine.approvals``); a point with no decision stops the run with
    ``AwaitingApproval`` (none given: every such point stops it).

    Budget exhaustion, cancellation and provider failures end the task with status
    ``budget_exceeded``, ``cancelled`` or ``error``; nodes still running are closed (failed or
    cancelled) and nodes not yet run are skipped. User errors (unknown strategy, missing
    prompt template) raise before anything runs.

    ``library``: the experience library the run replays stored solutions from
    (``reuse.skills``) and hands what it learned to when it ends (``adapt.engine.reuse``);
    ``None``: none (reuse settings then have no effect).
    """
    strategy = get_strategy(config.strategy)
    resolved, env_settings = _resolved(config, env, env_config)
    run = Run(env, resolved, executor_model, planner_model, sink=sink, cancel=cancel,
              price=price, env_config=env_settings, approvals=approvals,
              library=library)
    started = time.monotonic()
    observation = await start_episode_async(env, env_settings)
    root_goal = goal or env.goal
    task = await env_call(env, env.task_observation, goal) if goal else observation

    status: FinalStatus
    error: str | None = None
    exceeded: str | None = None
    try:
        if run.siblings is not None:  # sibling nodes that wait at the same time
            await run.siblings.drive(strategy(run, root_goal, task), run.sink.flush)
        else:
            await strategy(run, root_goal, task)
        root = run.nodes[1]
        status = "succeeded" if root.success else "failed"
    except BudgetError as exc:
        status, error, exceeded = "budget_exceeded", str(exc), exc.resource
        await _close_unfinished(run, "failed", str(exc))
    except CancelledByUser as exc:
        status, error = "cancelled", str(exc)
        await _close_unfinished(run, "cancelled", str(exc))
    except (UserError, TaskInterrupted):
        raise  # (and what is not a library error, e.g. a sink's lost lease, passes through)
    except AdaptError as exc:
        log.warning("task ended with an error: %s", exc)
        status, error = "error", f"{type(exc).__name__}: {exc}"
        await _close_unfinished(run, "failed", error)

    final = final_action(env)
    if final and status in ("succeeded", "failed") and not run.episode_done:
        await _final_action(run, final)

    root_node: Node | None = run.nodes.get(1)
    claimed = bool(root_node and root_node.success)
    final_check = None
    if root_node is not None and status in ("succeeded", "failed"):
        final_check = await final_verdict(env, root_goal, reward=run.reward,
                                          episode_done=run.episode_done)
        if final_check.verdict == "refuted" and status == "succeeded":
            # the status rule: never "succeeded" against the environment's word (any strategy)
            status = "failed"
            await run.update(root_node, status="failed", success=False,
                             verdict=final_check.verdict, evidence=final_check.evidence)
        elif root_node.verdict in (None, "unknown") and final_check.checkable:
            await run.update(root_node, verdict=final_check.verdict,
                             evidence=final_check.evidence)
    ran = [n for n in run.nodes.values() if n.kind == "task" and n.status not in
           ("pending", "skipped")]
    result = TaskResult(
        status=status,
        success=bool(root_node and root_node.success),
        claimed_success=claimed,
        verdict=None if final_check is None else final_check.verdict,
        reward=run.reward,
        goal=root_goal,
        strategy=resolved.strategy,
        profile=resolved.profile,
        d_max=resolved.d_max,
        usage=run.usage.model_copy(),
        usage_by_role={k: v.model_copy() for k, v in run.usage_by_role.items()},
        monitor=run.monitor_totals.model_copy(),
        nodes=len(run.nodes),
        max_depth=max((n.depth for n in ran), default=0),
        error=error,
        budget_exceeded=exceeded,
        wall_seconds=time.monotonic() - started,
        checked_subgoals=sum(1 for n in ran if n.depth > 1 and n.verdict is not None),
        checkable_subgoals=sum(1 for n in ran if n.depth > 1 and n.verdict in
                               ("confirmed", "refuted")),
    )
    await run.sink.emit(TaskFinished(result=result))
    await run.sink.flush()
    if run.experience is not None:
        await run.experience.save()
    return result


async def _final_action(run: Run, action: str) -> None:
    """Send the environment's final action (InterCode-SQL: ``submit``) when the task ended
    before the episode did, as InterCode and StateFlow do at the turn limit, so the last state
    is scored; recorded as a step of the last executed node (``extra.final``)."""
    ran = [n for n in run.nodes.values() if n.kind == "task" and n.steps_count > 0]
    node = max(ran, key=lambda n: n.id) if ran else run.nodes.get(1)
    if node is None:
        return
    result = await step_async(run.env, action)
    reward = float(result.reward)
    await run.add_step(node, Step(
        kind="action", node_id=node.id, index=node.steps_count + 1, raw=action, text=action,
        observation=result.observation, reward=reward, done=result.done,
        extra={"final": True}))
    run.fold(reward, result.done)


async def _close_unfinished(run: Run, running_to: NodeStatus, reason: str) -> None:
    for node in sorted(run.nodes.values(), key=lambda n: n.id):
        # (awaiting_approval: a sibling that waited when another ended the run)
        if node.status in ("running", "awaiting_approval"):
            await run.update(node, status=running_to, success=False, error=reason)
        elif node.status == "pending":
            await run.update(node, status="cancelled" if running_to == "cancelled" else "skipped",
                             reason=f"not run: {reason}")
