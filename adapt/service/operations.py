"""What the service reports about itself, for ``/environments``, ``/readyz``, ``/version`` and
``/metrics``: the catalogue a task may choose from, the readiness checks, the release, and the
aggregates Prometheus scrapes. Like :mod:`adapt.service.facade`, it hands the API plain results; the types and
bucket bounds re-exported here are part of those results."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from adapt.engine.executors.registry import available_executors
from adapt.engine.profiles import PROFILES
from adapt.engine.strategies import available_strategies
from adapt.envs import registry
from adapt.envs.registry import EnvironmentInfo
from adapt.settings import Settings
from adapt.store import metrics as running_totals
from adapt.store.queries import Histogram as Histogram
from adapt.store.queries import MetricsSnapshot as MetricsSnapshot
from adapt.store.traces import DURATION_BUCKETS as DURATION_BUCKETS
from adapt.store.traces import SPANS_DROPPED as SPANS_DROPPED
from adapt.store.traces import TOKEN_BUCKETS as TOKEN_BUCKETS
from adapt.store.traces import GenAIHistograms as GenAIHistograms
from adapt.store.traces import counter_values
from adapt.store.workers import live_workers

log = logging.getLogger(__name__)

#: seconds each readiness check may take
CHECK_TIMEOUT = 5.0


@dataclass(frozen=True)
class Catalog:
    """What a task may run on and with (built-ins and plug-ins)."""

    environments: list[EnvironmentInfo]
    strategies: list[str]
    executors: list[str]
    profiles: list[str]
    #: the server's default model: its spec, whether it is simulated, and the environments
    #: it can play (``None``: any)
    default_model: tuple[str, bool, list[str] | None] | None = None


def default_model(settings: Settings) -> tuple[str, bool, list[str] | None]:
    """The model a task that names none gets, and what it can play."""
    from adapt.llm.spec import parse_model_spec
    from adapt.sim.registry import SIMULATORS
    from adapt.sim.spec import split_spec

    spec, _ = settings.resolve_default_model()
    parsed = parse_model_spec(spec)
    plays: list[str] | None = None
    if parsed.backend == "sim" or parsed.model.startswith("sim:"):
        simulator = SIMULATORS.get(split_spec(parsed.model)[0])
        plays = list(simulator.environments) or None if simulator is not None else None
    return str(parsed), parsed.simulated, plays


def catalog(settings: Settings | None = None) -> Catalog:
    return Catalog(registry.describe(), available_strategies(), available_executors(),
                   list(PROFILES), default_model(settings) if settings is not None else None)


async def check_database(engine: AsyncEngine) -> str:
    """``ok``, or ``failed: <error class>`` (logged)."""
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
    except Exception as exc:
        log.warning("readiness: database check failed: %s", exc)
        return f"failed: {type(exc).__name__}"
    return "ok"


async def check_workers(engine: AsyncEngine, queue: str) -> str:
    """``ok`` when a worker on ``queue`` is live (its heartbeat keeps the registry fresh)."""
    try:
        async with asyncio.timeout(CHECK_TIMEOUT), AsyncSession(engine) as session:
            n = await live_workers(session, queue)
    except Exception as exc:
        log.warning("readiness: workers check failed: %s", type(exc).__name__)
        return f"failed: {type(exc).__name__}"
    return "ok" if n else f"no live worker on queue {queue}"


@dataclass(frozen=True)
class Metrics:
    """One scrape's figures, all from the database (every tenant)."""

    snapshot: MetricsSnapshot
    genai: list[GenAIHistograms] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)


async def metrics(session: AsyncSession) -> Metrics:
    """The running totals of finished tasks plus the rows of the others
    (:mod:`adapt.store.metrics`): the same cost at any database size."""
    figures = await running_totals.current(session)
    return Metrics(figures.snapshot, figures.genai, await counter_values(session))


def release() -> tuple[str, str]:
    """(the release running, the newest database migration it ships)."""
    from adapt.store.migrate import code_head
    from adapt.version import __version__

    return __version__, code_head()
