"""Fault-injection scenarios against the scale-out stack, and the figures they measure.

A scenario runs real Celery worker processes against a private PostgreSQL and Redis
(:mod:`tests.chaos.infra`) and the simulator's HTTP server (which logs every request it
answered, i.e. every paid call), submits tasks, injects one fault while they run, waits, and
reports:

- ``completed``: tasks that reached the status an uninterrupted run reaches, with an equal tree
  and a gap-free event sequence;
- ``statuses``: final (or last seen) status counts;
- ``repaid``: answered requests beyond the recorded calls (a call paid twice);
- ``recovery_s``: seconds from the fault clearing to the last task finishing;
- ``worker_exits``: exit codes of worker processes that ended during the scenario.

With an environment server (``stack(env_server="textcraft")``: ``adapt env serve`` in a process
of its own, registered with the workers as the remote ``textcraft``), a change the server
applied twice in one session (its log counts them) is a problem too.

Used by the chaos tests (which assert on the figures) and by ``python -m tests.chaos.bench``
(which prints them).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import signal
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.tree import FINAL_STATUSES
from adapt.envs.textcraft import TextCraft
from adapt.sim import from_spec
from adapt.store.db import create_engine, session_factory
from adapt.store.models import Task
from tests.chaos.infra import PrivatePostgres, PrivateRedis
from tests.service.helpers import events, insert_task, persisted_tree
from tests.service.test_execute import as_persisted
from tests.support.envserver import EnvServerProcess
from tests.support.simserver import SimServer, start_sim_server, stop_sim_server
from tests.support.workers import (
    SIM,
    Workers,
    http_spec,
    persisted_prompt_hashes,
    sim_prompt_hashes,
)
from workers.dispatchers import CeleryDispatcher

#: short leases so that recovery by lease expiry is quick in tests
SHORT_LEASE = {"lease_seconds": 2, "heartbeat_seconds": 0.5, "sweep_seconds": 1}
SEEDS = [11, 5, 3, 7, 2, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73]

_REFERENCE: dict[tuple[int, int], tuple[str, dict[str, Any]]] = {}


async def reference(seed: int, d_max: int = 4) -> tuple[str, dict[str, Any]]:
    """The status and tree of an uninterrupted in-process run of the task with ``seed``."""
    key = (seed, d_max)
    if key not in _REFERENCE:
        sink = MemorySink()
        result = await run_task(TextCraft(), {"seed": seed}, RunConfig(d_max=d_max),
                                from_spec(SIM), sink=sink)
        _REFERENCE[key] = (result.status, as_persisted(sink))
    return _REFERENCE[key]


@dataclass
class Figures:
    name: str
    tasks: int
    completed: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    repaid: int = 0
    recovery_s: float | None = None
    worker_exits: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        rec = "-" if self.recovery_s is None else f"{self.recovery_s:.1f}s"
        return (f"{self.name:<22} completed {self.completed:>3}/{self.tasks:<3} "
                f"statuses {dict(self.statuses)}  re-paid calls {self.repaid}  "
                f"recovery {rec}  worker exits {self.worker_exits or 'none'}")


@dataclass
class Stack:
    """One scenario's world: a fresh database on the private server, a queue on the private
    Redis, worker processes and a simulator."""

    pg: PrivatePostgres
    redis: PrivateRedis
    url: str
    queue: str
    workers: Workers
    sim: SimServer
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    #: pids of workers the fault stopped on purpose (their exits are not failures)
    victims: set[int] = field(default_factory=set)
    #: the environment server the workers' remote ``textcraft`` is at (None: in process)
    env_server: EnvServerProcess | None = None

    def worker_settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {**SHORT_LEASE, "llm_endpoints": [self.sim.base_url]}
        if self.env_server is not None:
            settings["remote_environments"] = {"textcraft": {"url": self.env_server.url}}
            settings["remote_environment_allowed_networks"] = ["127.0.0.1/32"]
        return settings

    async def submit(self, seeds: list[int], d_max: int = 4) -> list[str]:
        ids = [await insert_task(self.sessions, config={"seed": s}, model=http_spec(
            self.sim.base_url), run_config=RunConfig(d_max=d_max)) for s in seeds]
        dispatcher = CeleryDispatcher(self.redis.url, queue=self.queue)
        try:
            for task_id in ids:
                await dispatcher.dispatch(task_id)
        finally:
            await dispatcher.aclose()
        return ids

    async def calls_recorded(self) -> int:
        from sqlalchemy import func, select

        from adapt.store.models import LLMCallRow

        async with self.sessions() as s:
            return int((await s.execute(select(func.count()).select_from(LLMCallRow)))
                       .scalar_one())

    async def wait_calls(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while await self.calls_recorded() < n:
            assert time.monotonic() < deadline, self.workers.logs()
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def stack(pg: PrivatePostgres, redis: PrivateRedis, log_dir: Path, *,
                latency: float = 0.05, error_rate: float = 0.0,
                sim_options: dict[str, Any] | None = None,
                env_server: str | None = None) -> Any:
    url = await asyncio.to_thread(pg.create_database)
    queue = f"adapt-chaos-{uuid.uuid4().hex[:10]}"
    sim = start_sim_server(latency=latency, error_rate=error_rate, **(sim_options or {}))
    workers = Workers(url, queue, log_dir, broker_url=redis.url)
    engine = create_engine(url, pool_size=2)
    served = None
    try:
        if env_server is not None:
            served = EnvServerProcess(env_server, log_dir / "env-server.log")
            await asyncio.to_thread(served.start)
        yield Stack(pg, redis, url, queue, workers, sim, engine, session_factory(engine),
                    env_server=served)
    finally:
        workers.stop_all()
        if served is not None:
            served.stop()
        stop_sim_server(sim)
        await engine.dispose()


async def _rows(sessions: async_sessionmaker[AsyncSession], ids: list[str]) -> list[Task]:
    from sqlalchemy import select

    async with sessions() as s:
        return list((await s.execute(select(Task).where(Task.id.in_(ids)))).scalars())


async def wait_final(st: Stack, ids: list[str], timeout: float) -> float | None:
    """Until every task is final (returns the monotonic time) or ``timeout`` (None). The
    database may be down meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            rows = await _rows(st.sessions, ids)
        except Exception:
            await asyncio.sleep(0.2)
            continue
        if len(rows) == len(ids) and all(r.status in FINAL_STATUSES for r in rows):
            return time.monotonic()
        await asyncio.sleep(0.1)
    return None


async def measure(st: Stack, name: str, ids: list[str], seeds: list[int],
                  cleared_at: float | None, finished_at: float | None, d_max: int = 4) -> Figures:
    fig = Figures(name, len(ids))
    rows = {r.id: r for r in await _rows(st.sessions, ids)}
    persisted: Counter[str] = Counter()
    for task_id, seed in zip(ids, seeds, strict=True):
        row = rows[task_id]
        fig.statuses[row.status] += 1
        persisted += await persisted_prompt_hashes(st.sessions, task_id)
        want_status, want_tree = await reference(seed, d_max)
        evs = await events(st.sessions, task_id)
        gap_free = [e.seq for e in evs] == list(range(1, row.last_seq + 1))
        if not gap_free:
            fig.problems.append(f"task {task_id}: event sequence has gaps")
        if row.status != want_status:
            fig.problems.append(f"task {task_id} (seed {seed}): {row.status}, expected "
                                f"{want_status}: {row.error}")
            continue
        if await persisted_tree(st.sessions, task_id) != want_tree:
            fig.problems.append(f"task {task_id}: tree differs from the uninterrupted run")
            continue
        if gap_free:
            fig.completed += 1
    served = sim_prompt_hashes(st.sim.log())
    if persisted - served:
        fig.problems.append(f"recorded calls the provider never answered: {persisted - served}")
    fig.repaid = sum((served - persisted).values())
    if cleared_at is not None and finished_at is not None:
        fig.recovery_s = max(0.0, finished_at - cleared_at)
    fig.worker_exits = [w.proc.returncode for w in st.workers.started
                        if w.proc.poll() is not None and w.pid not in st.victims]
    if st.env_server is not None:
        twice = sorted(k for k, n in st.env_server.applied().items() if n > 1)
        if twice:
            fig.problems.append(f"changes applied twice by the environment server: {twice[:5]}")
    return fig


#: injects a fault and returns once it cleared; may submit more tasks (returned as id, seed)
Fault = Callable[[Stack], Awaitable[list[tuple[str, int]] | None]]


async def run(st: Stack, name: str, seeds: list[int], fault: Fault | None, *,
              workers: int = 2, concurrency: int = 8, timeout: float = 120,
              worker_settings: dict[str, Any] | None = None, d_max: int = 4) -> Figures:
    """Start ``workers`` worker processes, submit one task per seed, run ``fault`` (which
    returns once the fault has cleared), wait for every task, measure."""
    settings = {**st.worker_settings(), **(worker_settings or {})}
    procs = [st.workers.start(concurrency=concurrency, **settings) for _ in range(workers)]
    for p in procs:
        p.wait_ready()
    for seed in seeds:
        await reference(seed, d_max)
    ids = await st.submit(seeds, d_max)
    seeds = list(seeds)
    if fault is not None:
        for task_id, seed in await fault(st) or []:
            ids.append(task_id)
            seeds.append(seed)
    cleared = time.monotonic()
    finished = await wait_final(st, ids, timeout)
    return await measure(st, name, ids, seeds, cleared, finished, d_max)


# -- faults -------------------------------------------------------------------------------------
def terminate_backends(times: int = 1, every: float = 0.3, after_calls: int = 20) -> Fault:
    async def fault(st: Stack) -> None:
        await st.wait_calls(after_calls)
        for i in range(times):
            await asyncio.to_thread(st.pg.terminate_backends, st.url)
            if i + 1 < times:
                await asyncio.sleep(every)
        return None
    return fault


def restart_database(down_seconds: float = 3.0, after_calls: int = 20) -> Fault:
    async def fault(st: Stack) -> None:
        await st.wait_calls(after_calls)
        await asyncio.to_thread(st.pg.stop, "immediate")
        await asyncio.sleep(down_seconds)
        await asyncio.to_thread(st.pg.start)
        return None
    return fault


def restart_broker(down_seconds: float = 1.0, after_calls: int = 20,
                   sig: int = signal.SIGKILL, then: list[int] | None = None) -> Fault:
    """Restart Redis, then (a few seconds later) submit tasks with seeds ``then``."""
    async def fault(st: Stack) -> list[tuple[str, int]]:
        await st.wait_calls(after_calls)
        await asyncio.to_thread(st.redis.restart, down_seconds, sig)
        if not then:
            return []
        await asyncio.sleep(3)
        return list(zip(await st.submit(then), then, strict=True))
    return fault


def kill_workers(kills: int = 3, every: float = 1.5, sig: int = signal.SIGKILL,
                 after_calls: int = 10, seed: int = 0, concurrency: int = 8,
                 settings: dict[str, Any] | None = None) -> Fault:
    """Signal a random live worker ``kills`` times at random moments; start a replacement
    each time (the pool keeps its size)."""
    rng = random.Random(seed)

    async def fault(st: Stack) -> None:
        await st.wait_calls(after_calls)
        for _ in range(kills):
            await asyncio.sleep(rng.uniform(0.2, every))
            live = [w for w in st.workers.started if w.proc.poll() is None]
            if not live:
                break
            victim = rng.choice(live)
            st.victims.add(victim.pid)
            victim.proc.send_signal(sig)
            await asyncio.to_thread(victim.proc.wait, 30)
            st.workers.start(concurrency=concurrency, **{
                **st.worker_settings(), **(settings or {})})
        return None
    return fault


def duplicate_delivery(copies: int = 3) -> Fault:
    """Publish every unfinished task's id ``copies`` more times."""
    async def fault(st: Stack) -> None:
        from sqlalchemy import select

        async with st.sessions() as s:
            ids = list((await s.execute(select(Task.id))).scalars())
        dispatcher = CeleryDispatcher(st.redis.url, queue=st.queue)
        try:
            for _ in range(copies):
                for task_id in ids:
                    await dispatcher.dispatch(task_id)
        finally:
            await dispatcher.aclose()
        return None
    return fault


def zombie_worker(stopped_for: float = 5.0, after_calls: int = 10) -> Fault:
    """SIGSTOP a worker past its lease (others take its tasks over), then SIGCONT it."""
    async def fault(st: Stack) -> None:
        await st.wait_calls(after_calls)
        victim = st.workers.started[0]
        victim.proc.send_signal(signal.SIGSTOP)
        await asyncio.sleep(stopped_for)
        victim.proc.send_signal(signal.SIGCONT)
        return None
    return fault


def restart_env_server(down_seconds: float = 1.0, after_calls: int = 10) -> Fault:
    """Kill the environment server (SIGKILL: every session lost, requests in flight cut) and
    start it again on the same port after ``down_seconds``; a problem unless tasks were
    running then (their sessions are started again on the new server)."""
    async def fault(st: Stack) -> None:
        server = st.env_server
        if server is None:
            raise RuntimeError("restart_env_server needs stack(env_server=...)")
        await st.wait_calls(after_calls)
        await asyncio.to_thread(server.restart, down_seconds)
        return None
    return fault


def replayed_changes(worker_logs: str) -> list[int]:
    """For every session a worker started again after losing it: how many recorded changes
    it applied to the new one (from the workers' logs)."""
    return [int(n) for n in re.findall(r"starting it again with (\d+) operation", worker_logs)]


@contextlib.contextmanager
def servers(directory: Path) -> Iterator[tuple[PrivatePostgres, PrivateRedis]]:
    (directory / "redis").mkdir(parents=True, exist_ok=True)
    pg = PrivatePostgres()
    try:
        redis = PrivateRedis(directory / "redis")
        try:
            yield pg, redis
        finally:
            redis.close()
    finally:
        pg.close()


@dataclass
class Scenario:
    seeds: list[int]
    fault: Callable[[], Fault | None]
    #: most calls the design allows to be paid twice (those in flight at the fault)
    repaid_bound: int = 0
    stack: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    async def run(self, st: Stack, name: str = "") -> Figures:
        return await run(st, name, self.seeds, self.fault(), **self.options)


def _seeds(n: int) -> list[int]:
    return [100 + i for i in range(n)]


#: the experiments of issue 15, at full size (``python -m tests.chaos.bench``, slow tests)
SCENARIOS: dict[str, Scenario] = {
    "db-drop-once": Scenario(_seeds(21), lambda: terminate_backends(1), repaid_bound=21),
    "db-drop-repeated": Scenario(_seeds(21), lambda: terminate_backends(27, every=0.3),
                                 repaid_bound=21 * 27),
    "db-restart": Scenario(_seeds(21), lambda: restart_database(3.0), repaid_bound=21),
    "broker-restart": Scenario(_seeds(10), lambda: restart_broker(1.0, then=_seeds(16)[10:]),
                               repaid_bound=10, options={"timeout": 90}),
    "provider-errors": Scenario(_seeds(60), lambda: None, stack={"error_rate": 0.3},
                                options={"timeout": 300}),
    "kill-9": Scenario(_seeds(12), lambda: kill_workers(3, sig=signal.SIGKILL),
                       repaid_bound=3 * 8),
    "sigterm": Scenario(_seeds(12), lambda: kill_workers(3, sig=signal.SIGTERM),
                        repaid_bound=3 * 8),
    "duplicates": Scenario(_seeds(12), lambda: duplicate_delivery(3)),
    "zombie": Scenario(_seeds(12), lambda: zombie_worker(5.0), repaid_bound=8),
    "env-server-restart": Scenario(_seeds(21), lambda: restart_env_server(3.0, after_calls=60),
                                   stack={"env_server": "textcraft"}),
}

#: the same experiments, small enough to run on every CI run
SHORT: dict[str, Scenario] = {
    "db-drop-repeated": Scenario(_seeds(6), lambda: terminate_backends(8, every=0.3,
                                                                       after_calls=10),
                                 repaid_bound=6 * 8),
    "broker-restart": Scenario(_seeds(4), lambda: restart_broker(1.0, after_calls=10,
                                                                 then=_seeds(6)[4:]),
                               repaid_bound=4, options={"timeout": 90}),
    # 8 retries per call: at 30 % errors, 3 would leave about one task in ten stopped
    # (resumable) for lack of retries, which is the full-size experiment's figure, not a failure
    "provider-errors": Scenario(_seeds(6), lambda: None, stack={"error_rate": 0.3},
                                options={"worker_settings": {"llm_max_retries": 8}}),
    # drained calls are not paid again; a worker stopped before Celery installed its signal
    # handlers dies at once, so the bound is one worker's calls in flight
    "sigterm": Scenario(_seeds(6), lambda: kill_workers(1, sig=signal.SIGTERM,
                                                        after_calls=10), repaid_bound=8),
    "kill-9": Scenario(_seeds(6), lambda: kill_workers(1, sig=signal.SIGKILL, after_calls=10),
                       repaid_bound=8),
    # no worker stops: no call is paid twice; each task's session is started again on the
    # restarted server and its changes replayed, none applied twice in one session
    "env-server-restart": Scenario(_seeds(6), lambda: restart_env_server(1.0, after_calls=40),
                                   stack={"env_server": "textcraft"}),
}
