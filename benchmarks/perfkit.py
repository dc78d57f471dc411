"""Shared pieces of the performance benchmarks (``benchmarks.overhead``, ``.storage``,
``.tree_read``, ``.throughput``): scratch databases, running simulated TextCraft tasks in this
process through a real ``DbSink``, CPU clocks, and the line every benchmark ends with (the
figure, its goal and the ratio).

Benchmarks print figures; nothing here asserts a timing.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine import RunConfig, run_task
from adapt.engine.events import (
    Event,
    LLMCallMade,
    NodeCreated,
    NodeUpdated,
    StepAppended,
    TaskFinished,
    TreeSink,
)
from adapt.engine.tree import LLMCall, Node, Step, TaskResult
from adapt.envs import registry
from adapt.llm.base import ChatModel
from adapt.store import task_rows
from adapt.store.migrate import upgrade
from adapt.store.models import Task

ADMIN_URL = os.environ.get("ADAPT_BENCH_POSTGRES_URL",
                           "postgresql://postgres@127.0.0.1:5432/postgres")
SIM_SPEC = "sim:textcraft?capability=1"
OWNER = "bench:0:perf"


def load_avg() -> float:
    """The 1-minute load average (printed beside every figure: the machine is shared)."""
    return os.getloadavg()[0]


@dataclass
class Figure:
    """One benchmark figure against its goal. ``higher``: bigger is better (a ratio >= 1 meets
    the goal); otherwise smaller is better (a ratio <= 1 meets it)."""

    name: str
    value: float
    goal: float
    unit: str
    higher: bool = False

    @property
    def ratio(self) -> float:
        return self.value / self.goal if self.goal else float("nan")

    @property
    def met(self) -> bool:
        return self.value >= self.goal if self.higher else self.value <= self.goal

    def line(self) -> str:
        sign = ">=" if self.higher else "<="
        return (f"{self.name}: {self.value:.4g} {self.unit} (goal {sign} {self.goal:g} "
                f"{self.unit}; ratio {self.ratio:.2f}: {'met' if self.met else 'NOT met'}; "
                f"load {load_avg():.2f})")


def table(rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


class Clock:
    """Wall and process CPU time of a block (``with Clock() as c: ...; c.wall, c.cpu``)."""

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


@contextlib.contextmanager
def scratch_database(kind: str) -> Iterator[str]:
    """A migrated throw-away database ("postgres" or "sqlite"), dropped afterwards."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="adapt-bench-") as tmp:
            url = f"sqlite:///{tmp}/bench.db"
            upgrade(url)
            yield url
        return
    import psycopg2
    from psycopg2 import sql

    name = f"adapt_bench_{uuid.uuid4().hex[:10]}"

    def admin(statement: Any, *args: Any) -> None:
        conn = psycopg2.connect(ADMIN_URL)
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(statement, args or None)
        finally:
            conn.close()

    admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    try:
        upgrade(url)
        yield url
    finally:
        admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", name)
        admin(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


def sim_model() -> ChatModel:
    """The simulated TextCraft model, in this process (no HTTP, zero latency)."""
    from adapt.sim import from_spec

    return from_spec(SIM_SPEC)


async def leased_task(sessions: async_sessionmaker[AsyncSession], seed: int,
                      tenant: str = "bench") -> tuple[str, int]:
    """A TextCraft task row claimed by the bench's owner: (task id, attempt)."""
    rc = RunConfig(d_max=4)
    task_id = task_rows.new_id()
    async with sessions.begin() as session:
        session.add(Task(
            id=task_id, tenant=tenant, status="queued", environment="textcraft",
            environment_config={"seed": seed}, strategy=rc.strategy, d_max=rc.d_max,
            run_config=rc.model_dump(mode="json"), executor_model=SIM_SPEC,
            planner_model=SIM_SPEC, executor_simulated=True, planner_simulated=True))
    attempt = await task_rows.claim(sessions, task_id, OWNER, 3600)
    if attempt is None:
        raise RuntimeError(f"could not claim the new task {task_id}")
    return task_id, attempt


async def run_textcraft(seed: int, sink: TreeSink | None, model: ChatModel | None = None
                        ) -> TaskResult:
    """One simulated TextCraft task (d_max 4) with ``sink``."""
    env = registry.create("textcraft")
    try:
        m = model or sim_model()
        return await run_task(env, {"seed": seed}, RunConfig(d_max=4), m, m, sink=sink)
    finally:
        env.close()


async def stored_tasks(url: str, runs: Iterable[tuple[int, str]]) -> dict[str, int]:
    """Run a simulated TextCraft task per ``(seed, tenant)`` of ``runs`` into the database at
    ``url``, each through a real ``DbSink`` on a claimed row; the LLM calls per tenant."""
    from adapt.store.db import create_engine, session_factory
    from adapt.store.sink import DbSink

    engine = create_engine(url)
    sessions = session_factory(engine)
    model = sim_model()
    calls: dict[str, int] = {}
    try:
        for seed, tenant in runs:
            task_id, attempt = await leased_task(sessions, seed, tenant=tenant)
            sink = DbSink(sessions, task_id, attempt, OWNER)
            used = (await run_textcraft(seed, sink, model)).usage.llm_calls
            calls[tenant] = calls.get(tenant, 0) + used
    finally:
        await engine.dispose()
    return calls


class Concat(TreeSink):
    """Feeds several runs into one sink as ONE task: a synthetic root (an AND group) whose
    children are the runs' roots; node, step and call ids are renumbered. How the big-task
    benchmarks grow a realistic task of thousands of nodes from short simulated runs."""

    def __init__(self, sink: TreeSink) -> None:
        self.sink = sink
        self.nodes = 1
        self.calls = 0
        self.runs = 0
        self._offset = 0
        self._call_offset = 0
        self._root = Node(id=1, kind="group", goal="many goals", logic="and", status="running")

    async def start(self) -> None:
        await self.sink.emit(NodeCreated(node=self._root))

    def next_run(self) -> None:
        self._offset = self.nodes
        self._call_offset = self.calls
        self.runs += 1

    def _node(self, node: Node) -> Node:
        parent = self._offset + node.parent_id if node.parent_id is not None else 1
        position = node.position if node.parent_id is not None else self.runs - 1
        out = node.model_copy(update={"id": self._offset + node.id, "parent_id": parent,
                                      "position": position, "depth": node.depth + 1})
        self.nodes = max(self.nodes, out.id)
        return out

    async def emit(self, event: Event) -> None:
        out: Event
        if isinstance(event, NodeCreated):
            out = NodeCreated(node=self._node(event.node))
        elif isinstance(event, NodeUpdated):
            out = NodeUpdated(node=self._node(event.node))
        elif isinstance(event, StepAppended):
            step: Step = event.step
            out = StepAppended(step=step.model_copy(update={"node_id": self._offset
                                                            + step.node_id}))
        elif isinstance(event, LLMCallMade):
            call: LLMCall = event.call
            self.calls = max(self.calls, self._call_offset + call.id)
            node_id = None if call.node_id is None else self._offset + call.node_id
            out = event.model_copy(update={"call": call.model_copy(update={
                "id": self._call_offset + call.id, "node_id": node_id})})
        else:
            return  # one task.finished, at the end (``finish``)
        await self.sink.emit(out)

    async def flush(self) -> None:
        await self.sink.flush()

    async def finish(self, result: TaskResult) -> None:
        await self.sink.emit(NodeUpdated(node=self._root.model_copy(
            update={"status": "succeeded", "success": True})))
        await self.sink.emit(TaskFinished(result=result.model_copy(
            update={"nodes": self.nodes, "max_depth": 5})))
