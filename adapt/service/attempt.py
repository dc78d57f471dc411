"""One attempt of a persisted task, built and ready to run: :func:`prepare_attempt` is the
factory (the task's row, its replay material, the environment, the models, the sinks and the
cancel check), :meth:`Attempt.run` hands them to the engine.

The models replay the task's recorded LLM calls first and go live after the last one (through
the process's retrying, draining-aware clients); the engine's events go to the database sink
(whose writes are fenced by this attempt's lease), the task's webhooks and, when traces are
exported, its spans. A cancel requested while no worker ran the task is seen before the first
live call (not during the replay, whose events must equal the recorded ones).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine import run_task
from adapt.engine.approvals import ApprovalGate
from adapt.engine.config import ModelSpecs, ResolvedConfig
from adapt.engine.events import FanoutSink, TreeSink
from adapt.engine.tree import TaskResult
from adapt.envs import registry
from adapt.envs.base import Environment, in_env_thread
from adapt.envs.journal import RecordedStep, Resumable, ResumeHistory
from adapt.llm.base import ChatModel, ChatResponse
from adapt.llm.recording import (
    RecordedCall,
    Recording,
    RecordingModel,
    ReplayCursor,
    ReplayModel,
)
from adapt.llm.retry import RetryBudget
from adapt.service.approvals import gate_for
from adapt.service.context import ServiceContext
from adapt.service.errors import TaskGone, WrittenByNewerRelease
from adapt.service.webhooks import WebhookSink
from adapt.store import task_rows
from adapt.store import traces as trace_store
from adapt.store import webhooks as webhook_store
from adapt.store.attempt import AttemptControl
from adapt.store.journal import fork_root, split_steps
from adapt.store.library import DbLibrary
from adapt.store.models import Task
from adapt.store.sink import DbSink

if TYPE_CHECKING:
    from adapt.telemetry.sink import OtelSink

log = logging.getLogger(__name__)


@dataclass
class Attempt:
    """Everything one attempt of ``task`` runs with."""

    task: Task
    number: int
    env: Environment
    #: the task's resolved config, as stored at submission: the engine runs it as it is
    config: ResolvedConfig
    #: the executor models in cascade order (the first is the task's executor model)
    executors: list[ChatModel]
    planner: ChatModel
    #: the database sink: its writes are fenced by this attempt's lease
    store: DbSink
    #: the task's span sink (None: traces are not exported)
    trace: OtelSink | None
    #: every sink the engine emits to, in order (the store first among its own)
    sink: TreeSink
    cancelled: Callable[[], bool]
    ctx: ServiceContext
    #: the decisions a person made on the task's approval requests (``adapt.engine.approvals``)
    approvals: ApprovalGate | None = None

    async def run(self) -> TaskResult:
        return await run_task(
            # the environment config is validated once, by run_task (the API validated it
            # before storing it); the config is resolved already (profile, budget, models)
            self.env, self.task.environment_config, self.config, self.executors, self.planner,
            goal=self.task.goal, sink=self.sink, cancel=self.cancelled, price=self.ctx.price,
            approvals=self.approvals,
            library=self.library(),
        )

    def library(self) -> DbLibrary | None:
        """The tenant's experience library, when the task reuses skills or plans: looked up
        as of the time the task's first attempt started, so every attempt finds the same
        entries."""
        if not (self.config.reuse.skills or self.config.reuse.plans):
            return None
        task = self.task
        return DbLibrary(self.ctx.sessions, task.tenant, task.id, task.started_at)

    def close(self) -> None:
        self.env.close()


@dataclass(frozen=True)
class Replay:
    """What an attempt replays: the recorded calls, the events stored already, and whether
    the calls are the fork origin's (a fork before its fork point)."""

    recording: Recording
    events: int
    from_origin: bool = False


async def _load_replay(session: AsyncSession, task: Task) -> Replay:
    """The calls an attempt replays, and the events stored already. A fork that has not yet
    recorded the calls before its fork point (its first attempt, or one that stopped before
    them) replays its origin's: its own are the same answers, to the same requests."""
    calls: list[tuple[str, dict[str, Any]]] = []
    events = 0
    if task.last_seq:  # else nothing is stored yet (a first attempt): nothing to read
        calls, events = await task_rows.replay_material_in(session, task.id)
    from_origin = bool(task.forked_from_task and task.fork_calls is not None
                       and len(calls) < task.fork_calls)
    if from_origin and task.forked_from_task and task.fork_calls:
        calls, _ = await task_rows.replay_material_in(
            session, task.id, calls_of=task.forked_from_task, at_most=task.fork_calls)
    recording = Recording(calls=[
        RecordedCall(index=i, fingerprint=fingerprint,
                     response=ChatResponse.model_validate(response))
        for i, (fingerprint, response) in enumerate(calls)
    ])
    return Replay(recording, events, from_origin)


async def _history(ctx: ServiceContext, task: Task, replay: Replay
                   ) -> tuple[str, list[RecordedStep]]:
    """The key and recorded steps an environment with side effects resumes from: the task's
    own steps; a fork still before its fork point, its origin's up to there (the key, for a
    fork, is the id of the task its chain of forks starts from)."""
    if not task.forked_from_task and not replay.events:  # a first attempt: nothing recorded
        return task.id, []
    async with ctx.sessions() as session:  # one session for the key and the steps
        key = await fork_root(session, task.id) if task.forked_from_task else task.id
        if replay.from_origin and task.forked_from_task:
            before, _ = await split_steps(session, task.forked_from_task, task.fork_calls)
        elif replay.events:
            before, _ = await split_steps(session, task.id, None)
        else:
            before = []
    return key, before


async def prepare_attempt(ctx: ServiceContext, task_id: str, attempt: int) -> Attempt:
    """Attempt ``attempt`` (claimed by this process) of ``task_id``; ``TaskGone`` when the row
    no longer exists."""
    # the task row, its replay material and its webhook endpoints in one session (one
    # transaction: a session apiece cost two more BEGIN and ROLLBACK round trips)
    async with ctx.sessions() as session:
        task = await session.get(Task, task_id)
        if task is None:
            raise TaskGone(f"task {task_id} no longer exists")
        replay = await _load_replay(session, task)
        endpoints = await webhook_store.targets_in(session, task.id, task.tenant)
    config = stored_config(task)
    # a remote environment's class may need its server's metadata: read off the loop
    env = await in_env_thread(registry.create, task.environment)
    try:
        return await _assemble(ctx, task, attempt, env, config, replay, endpoints)
    except BaseException:
        env.close()
        raise


#: what a config stored by a newer release fails with here: a field, or a value of a closed
#: set (an executor kind, an option), this release does not know
NEWER_RELEASE_ERRORS = frozenset({"extra_forbidden", "literal_error", "enum",
                                  "union_tag_invalid", "unknown_executor_kind"})


def stored_config(task: Task) -> ResolvedConfig:
    """The resolved config ``task`` stored (a row written before configs were resolved
    names its models in its columns). A config that names only what this release does not
    know raises ``WrittenByNewerRelease``."""
    try:
        return ResolvedConfig.from_stored(task.run_config, executor_model=task.executor_model,
                                          planner_model=task.planner_model)
    except ValidationError as exc:
        errors = exc.errors()
        if errors and all(e["type"] in NEWER_RELEASE_ERRORS for e in errors):
            unknown = ", ".join(sorted({".".join(str(p) for p in e["loc"]) for e in errors}))
            raise WrittenByNewerRelease(
                f"task {task.id}: its config names what this release of adapt does not know "
                f"({unknown}): a newer release stored it") from exc
        raise


async def _assemble(ctx: ServiceContext, task: Task, attempt: int, env: Environment,
                    config: ResolvedConfig, replay: Replay,
                    endpoints: list[webhook_store.Target]) -> Attempt:
    recording, skip = replay.recording, replay.events
    cursor = ReplayCursor()
    budget = RetryBudget(ctx.settings.llm_retry_budget)

    def wrap(spec: str) -> ChatModel:
        live = ctx.live_model(spec, budget)
        return RecordingModel(ReplayModel(recording, live=live, cursor=cursor))

    # the models the resolved config names (checked at submission), each spec wrapped once
    models = config.models or ModelSpecs(executor=(task.executor_model,),
                                         planner=task.planner_model)
    wrapped = {spec: wrap(spec) for spec in dict.fromkeys((*models.executor, models.planner))}
    cascade = [wrapped[spec] for spec in models.executor]
    planner = wrapped[models.planner]
    if isinstance(env, Resumable):  # side effects: it resumes from the recorded steps
        key, steps = await _history(ctx, task, replay)
        env.resume_with(ResumeHistory(
            key=key, steps=steps,
            replaying=lambda: len(recording) > 0 and cursor.live == 0))
    # what the database says to this attempt (cancel, lease lost), apart from the sinks
    control = AttemptControl(task.id, attempt, ctx.worker_id,
                             cancel_requested=task.cancel_requested)
    store = DbSink(ctx.sessions, task.id, attempt, ctx.worker_id, skip=skip,
                   store_prompts=ctx.settings.store_prompts, control=control)
    replayed = len(recording)
    sinks: list[TreeSink] = []
    if endpoints:
        wake = ctx.webhook_sender.wake if ctx.webhook_sender is not None else None
        sinks.append(WebhookSink(
            ctx.sessions, task.id, endpoints, wake=wake,
            max_node_deliveries=ctx.settings.webhook_max_deliveries_per_task))
    trace = await _trace_sink(ctx, task, skip, store) if ctx.telemetry is not None else None
    tail: list[TreeSink] = [store] if trace is None else [store, trace]

    if skip:
        log.info("task %s: resuming; replaying %d LLM calls and %d events", task.id,
                 len(recording), skip)
    every = [*sinks, *tail]
    gate = await gate_for(ctx.sessions, task.id) if config.approval.any else None
    return Attempt(task, attempt, env, config, cascade, planner, store, trace,
                   FanoutSink(every) if len(every) > 1 else store,
                   control.cancel_check(lambda: cursor.position >= replayed), ctx, gate)


async def _trace_sink(ctx: ServiceContext, task: Task, skip: int, sink: DbSink) -> OtelSink:
    """The task's span sink; a resumed attempt gets the event log's times for its replay."""
    from adapt.telemetry.history import ns, task_info
    from adapt.telemetry.sink import OtelSink, Replay
    from adapt.telemetry.spans import TraceBuilder

    if ctx.telemetry is None:
        raise RuntimeError("trace export is not configured")
    replay = Replay()
    if skip or task.attempt > 1:
        recorded = await trace_store.event_times(ctx.sessions, task.id)
        replay = Replay({k: ns(v) for k, v in recorded.times.items()},
                        [(after, ns(at)) for after, at in recorded.aborts])
    builder = TraceBuilder(task_info(task), content=ctx.settings.otel_capture_content)
    return OtelSink(builder, ctx.telemetry.export, skip=skip, replay=replay,
                    writing=sink.writing)
