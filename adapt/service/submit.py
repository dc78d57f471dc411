"""Create and cancel persisted tasks (the API's write side; no web framework here).

``submit_task`` validates what the engine cannot check until it runs (environment, its config,
strategy, model specs and the real-model guard), resolves the request once
(:func:`adapt.engine.resolve.resolve_config`: the profile, the operator's budget limits, the
checked models) and inserts a queued task whose ``run_config`` is that resolved config: the
worker runs it as it is. With an idempotency key, a repeat of the same request returns the task
created first, and a different request under the same key raises ``IdempotencyConflict``; the
unique constraint ``(tenant, idempotency_key)`` makes this safe under concurrent submissions.

``cancel_task`` is cooperative: it sets ``cancel_requested`` (the worker stops at the next LLM
call boundary) and cancels a still-queued task outright, in one conditional statement.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine.config import ModelSpecs, ResolvedConfig, RunConfig
from adapt.engine.resolve import BudgetLimits, resolve_config
from adapt.engine.strategies import available_strategies
from adapt.engine.strategies.registry import NO_SIBLINGS
from adapt.envs import registry
from adapt.errors import InvalidConfig, OverLimit, UnknownEnvironment, UserError
from adapt.service.errors import IdempotencyConflict, RateLimited, SubmissionInvalid
from adapt.service.model_factory import ModelChoice, ModelFactory
from adapt.service.paths import PathNotAllowed, check_named_paths, check_server_paths
from adapt.settings import Settings
from adapt.store import approvals as approval_store
from adapt.store import task_rows
from adapt.store import webhooks as webhook_store
from adapt.store.models import Task, WebhookEndpoint, utcnow
from adapt.webhooks import WEBHOOK_EVENTS, OutboundRefused, webhook_policy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WebhookRequest:
    url: str
    events: tuple[str, ...] = ("task.finished",)


@dataclass(frozen=True)
class ModelRequest:
    """The models a request names, as specs (``None`` / empty: not named)."""

    #: the executor's model (the API's ``executor.model``; unset: the server's default)
    executor: str | None = None
    #: a model cascade instead (``executor.models``, in order)
    cascade: tuple[str, ...] = ()
    #: the planner's (``planner.model``; unset: the executor's first model)
    planner: str | None = None


@dataclass(frozen=True)
class Submission:
    """What a user asks for, already type-checked (e.g. by the API's request model)."""

    environment: str
    environment_config: Mapping[str, Any]
    run_config: RunConfig
    goal: str | None = None
    models: ModelRequest = ModelRequest()
    #: ``{"url": ..., "events": [...]}``: this task's own webhook (see adapt.webhooks)
    webhook: WebhookRequest | None = None
    #: a fork's origin (``adapt.service.fork``)
    fork: ForkOrigin | None = None


@dataclass(frozen=True)
class ForkOrigin:
    """Where a fork comes from: the task, the node, and how many of the task's recorded calls
    (those before the node) its first attempt replays."""

    task_id: str
    node_id: int
    calls: int


@dataclass(frozen=True)
class Validated:
    """A submission checked and resolved: what the task row stores."""

    config: ResolvedConfig
    #: the environment config as stored: what the user (and the profile) set, validated
    environment_config: dict[str, Any]
    #: the executor models in cascade order, and the planner's, as checked
    executors: tuple[ModelChoice, ...]
    planner: ModelChoice


@dataclass(frozen=True)
class Submitted:
    task: Task
    created: bool  # False: an idempotent replay returned the task created earlier
    #: the task's webhook endpoint, with its secret (only when ``created``)
    webhook: WebhookEndpoint | None = None


def request_hash(body: Any) -> str:
    """SHA-256 of the canonical JSON of ``body`` (sorted keys, no whitespace)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def check_model(field: str, spec: str, settings: Settings,
                environment: str | None = None, *, default: bool = False) -> ModelChoice:
    """Apply every rule the worker's model factory will (endpoint allow-list, guard,
    ``local:`` roots, a simulator that can play ``environment``), naming ``field`` when one
    fails (``default``: the request named no model, the server's default was checked)."""
    try:
        return ModelFactory(settings).check(spec, environment)
    except UserError as exc:
        said = f"no model given, and this server's default model {spec!r} cannot be used: " \
            if default else ""
        raise SubmissionInvalid(field, said + str(exc)) from None


def check_models(request: ModelRequest, settings: Settings, environment: str | None = None,
                 ) -> tuple[list[ModelChoice], ModelChoice]:
    """The executor models (a cascade's, in order, or the one) and the planner's, each checked
    as the worker will build it (and, given the ``environment``, that a simulator can play
    it); ``SubmissionInvalid`` names the first bad field."""
    if request.cascade and request.executor:
        raise SubmissionInvalid("executor.models", (
            "give executor.model or executor.models, not both (executor.models[0] is the "
            "first executor model)"))
    # every model of a cascade passes the same rules (endpoint allow-list, guard, local roots)
    executors = [check_model(f"executor.models.{i}", spec, settings, environment)
                 for i, spec in enumerate(request.cascade)]
    seen: set[str] = set()
    for choice in executors:  # two specs may name one model (a simulator's knobs in any order)
        if choice.spec in seen:
            raise SubmissionInvalid("executor.models", f"model {choice.spec!r} is listed "
                                    "twice; a cascade tries each model once")
        seen.add(choice.spec)
    if not executors:
        default_model, _ = settings.resolve_default_model()
        executors = [check_model("executor.model", request.executor or default_model,
                                 settings, environment, default=not request.executor)]
    planner = (check_model("planner.model", request.planner, settings, environment)
               if request.planner else executors[0])
    return executors, planner


def validate_submission(sub: Submission, settings: Settings) -> Validated:
    """The submission checked and resolved once (the profile for its environment, the
    operator's budget limits, the checked models); raises ``SubmissionInvalid`` naming the
    first bad field."""
    size = len(json.dumps(sub.environment_config, ensure_ascii=False, default=str).encode())
    if size > settings.max_config_bytes:
        raise SubmissionInvalid("environment_config", (
            f"{size} bytes as JSON, over this server's limit of {settings.max_config_bytes} "
            "(ADAPT_MAX_CONFIG_BYTES)"))
    try:
        env_cls = registry.get(sub.environment)
    except UnknownEnvironment as exc:
        raise SubmissionInvalid("environment", str(exc)) from None
    executors, planner = check_models(sub.models, settings, sub.environment)
    models = ModelSpecs(executor=tuple(c.spec for c in executors), planner=planner.spec)
    try:
        resolved, env_config = resolve_config(
            sub.run_config, env_cls, sub.environment_config, models=models,
            limits=BudgetLimits(settings.default_budget, settings.max_budget))
    except OverLimit as exc:
        raise SubmissionInvalid(exc.field, f"{exc.value:g} is over this server's maximum of "
                                f"{exc.limit:g} (ADAPT_MAX_BUDGET)") from None
    for name, what in (("skills", "skill"), ("plans", "plan")):
        if getattr(resolved.reuse, name) and resolved.verification != "env":
            raise SubmissionInvalid(f"reuse.{name}", (
                f"{what} reuse needs verification 'env' (the environment confirms every reused "
                f"{what}); this task runs with verification {resolved.verification!r} (profile "
                f"{resolved.profile!r}); set verification to 'env' or leave reuse.{name} off"))
    try:
        config: BaseModel = registry.validate_config(
            sub.environment, env_config if isinstance(env_config, dict)
            else env_config.model_dump(exclude_unset=True))
    except UnknownEnvironment as exc:
        raise SubmissionInvalid("environment", str(exc)) from None
    except InvalidConfig as exc:
        raise SubmissionInvalid("environment_config", str(exc)) from None
    strategies = available_strategies()
    if resolved.strategy not in strategies:
        raise SubmissionInvalid(
            "strategy",
            f"unknown strategy {resolved.strategy!r}; available: {', '.join(strategies)}",
        )
    if resolved.approval.parallel_siblings and resolved.strategy in NO_SIBLINGS:
        raise SubmissionInvalid("approval.parallel_siblings", (
            f"strategy {resolved.strategy!r} runs no plan, so no node has siblings to start "
            "while one waits for a decision; use a strategy that plans (adapt, "
            "plan_and_execute) or leave approval.parallel_siblings off"))
    try:
        paths = check_server_paths(config, settings.path_roots)
        check_named_paths(env_cls, config, settings.path_roots)
    except PathNotAllowed as exc:
        raise SubmissionInvalid(f"environment_config.{exc.field}", str(exc)) from None
    # what the user set (validated), without nulls or defaults: the environment fills those in
    stored = {**config.model_dump(mode="json", exclude_none=True, exclude_defaults=True),
              **paths}
    return Validated(resolved, stored, tuple(executors), planner)


async def check_rate(session: AsyncSession, settings: Settings, tenant: str) -> None:
    """Raise ``RateLimited`` when ``tenant`` has too many queued/running tasks, or submitted
    too many in the last minute."""
    active = await task_rows.active_count(session, tenant)
    if active >= settings.tenant_max_active_tasks:
        raise RateLimited(
            f"tenant {tenant!r} has {active} queued or running tasks, the most this server "
            f"allows ({settings.tenant_max_active_tasks}); wait for some to finish, or cancel "
            "some", retry_after=10)
    now = utcnow()
    window = timedelta(seconds=60)
    recent = await task_rows.submitted_since(session, tenant, now - window,
                                             settings.tenant_submissions_per_minute)
    if len(recent) >= settings.tenant_submissions_per_minute:
        wait = max(1, math.ceil((recent[0] + window - now).total_seconds()))
        raise RateLimited(
            f"tenant {tenant!r} submitted {len(recent)} tasks in the last minute, the most "
            f"this server allows ({settings.tenant_submissions_per_minute}); retry in {wait} s",
            retry_after=wait)


def _replay(task: Task, digest: str, key: str) -> Submitted:
    if task.request_hash != digest:
        raise IdempotencyConflict(key, task.id)
    return Submitted(task, created=False)


async def submit_task(
    session: AsyncSession,
    settings: Settings,
    tenant: str,
    sub: Submission,
    *,
    idempotency_key: str | None = None,
    body_hash: str | None = None,
) -> Submitted:
    """Validate and insert a queued task, and commit. The caller dispatches it afterwards.

    ``body_hash`` (see :func:`request_hash`) identifies the request for idempotency.
    """
    if idempotency_key is not None:
        if body_hash is None:
            raise ValueError("an idempotency key needs the request's body_hash")
        existing = await task_rows.by_idempotency_key(session, tenant, idempotency_key)
        if existing is not None:
            return _replay(existing, body_hash, idempotency_key)

    valid = validate_submission(sub, settings)
    if sub.webhook is not None:
        check_webhook("webhook", sub.webhook.url, sub.webhook.events, settings)
    await check_rate(session, settings, tenant)
    config = valid.config
    task_id = task_rows.new_id()
    endpoint = None
    if sub.webhook is not None:
        endpoint = webhook_store.new_endpoint(tenant, sub.webhook.url, sub.webhook.events,
                                              task_id=task_id)
    task = await task_rows.insert(
        session, task_id, rows=[endpoint] if endpoint is not None else [], tenant=tenant,
        environment=sub.environment,
        environment_config=valid.environment_config, goal=sub.goal, strategy=config.strategy,
        profile=config.profile, d_max=config.d_max,
        # the resolved config, as the worker will run it; the model columns list its models
        run_config=config.model_dump(mode="json"),
        executor_model=valid.executors[0].spec, planner_model=valid.planner.spec,
        executor_simulated=any(c.simulated for c in valid.executors),
        planner_simulated=valid.planner.simulated,
        idempotency_key=idempotency_key,
        request_hash=body_hash if idempotency_key is not None else None,
        forked_from_task=sub.fork.task_id if sub.fork is not None else None,
        forked_from_node=sub.fork.node_id if sub.fork is not None else None,
        fork_calls=sub.fork.calls if sub.fork is not None else None,
    )
    if task is None:  # a concurrent request with the same key won the insert
        existing = None
        if idempotency_key is not None:
            existing = await task_rows.by_idempotency_key(session, tenant, idempotency_key)
        if existing is None or idempotency_key is None or body_hash is None:
            raise RuntimeError(f"idempotency key {idempotency_key!r} taken by no task")
        return _replay(existing, body_hash, idempotency_key)
    log.info("task %s queued (tenant %s, %s, %s)", task.id, tenant, sub.environment,
             sub.run_config.strategy)
    return Submitted(task, created=True, webhook=endpoint)


def check_webhook(field: str, url: str, events: Any, settings: Settings) -> None:
    """A webhook's URL against the outbound-address policy and its event names; raises
    ``SubmissionInvalid`` naming ``field`` (the request's webhook object; "": the request
    is the webhook)."""
    prefix = f"{field}." if field else ""
    try:
        webhook_policy(settings.webhook_allowed_networks).check_url(url)
    except OutboundRefused as exc:
        raise SubmissionInvalid(f"{prefix}url", str(exc)) from None
    unknown = [e for e in events if e not in WEBHOOK_EVENTS]
    if unknown or not events:
        raise SubmissionInvalid(f"{prefix}events", (
            f"unknown event(s) {', '.join(map(repr, unknown))}; " if unknown else "empty; ")
            + f"events are {', '.join(WEBHOOK_EVENTS)}")


async def cancel_task(session: AsyncSession, task: Task) -> Task:
    """Request cancellation of ``task`` (idempotent) and commit; returns the fresh row.

    Finished tasks are returned unchanged; a queued or waiting task is cancelled at once, a
    running one
    stops at its next LLM call (see :func:`adapt.store.task_rows.cancel`)."""
    was = task.status
    error = (task_rows.CANCELLED_WHILE_WAITING if was == "waiting"
             else task_rows.CANCELLED_BEFORE_START)

    async def report(s: AsyncSession) -> None:  # in the same transaction as the cancel
        await webhook_store.record_end(s, task.id, "cancelled", "cancelled", error)
        await approval_store.withdraw(s, task.id, "cancelled")  # nobody decides them now

    if await task_rows.cancel(session, task, also=report):
        log.info("task %s cancelled while %s", task.id, was)
    return task
