"""``/metrics`` at the same cost at any database size: running totals of the finished tasks.

A scrape used to aggregate every task, node and LLM call (10 ms at 50 tasks, 828 ms at 100k).
Now the figures of finished tasks are *folded*, once, into one JSON document
(``metrics_rollup``) and the task is marked (``tasks.metrics_folded``); a scrape reads that
document and aggregates row by row only the tasks not folded yet (those running or queued, and
those that finished since the last scrapes), which a partial index finds. So every number is
still the rows' own: ``folded + aggregate(unfolded) == aggregate(all)`` at every moment.

What keeps that equation true:

- a task is folded only in a final status, untouched for ``FOLD_GRACE`` (its rows are
  settled), at most ``FOLD_BATCH`` tasks per scrape (a first scrape after the upgrade does not
  fold 100k tasks at once; the backlog is folded over the next scrapes, still exact);
- the two changes a finished task can still see take its figures out again, in their own
  transaction: a resume (:func:`unfold`, before it is queued again) and a deletion
  (:func:`unfold` then delete: deleted tasks leave the figures as they leave the rows);
- everyone who changes folded figures (a scrape folding, a resume, a deletion) first locks the
  rollup row (an UPDATE of it), so they apply one after another, and a scrape reads the
  document and the unfolded rows while it holds that lock.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine.tree import FINAL_STATUSES, TASK_STATUSES
from adapt.store.models import MetricsRollup, Task, utcnow
from adapt.store.queries import Histogram, MetricsSnapshot, metrics_snapshot
from adapt.store.traces import GenAIHistograms, genai_histograms
from adapt.store.workers import live_workers

#: the rollup row's name
ROLLUP = "metrics"
#: most tasks one scrape folds
FOLD_BATCH = 500
#: seconds a finished task stays untouched before it is folded
FOLD_GRACE = 60.0


@dataclass
class Figures:
    """What ``/metrics`` reports from the rows: adapt's aggregates and the GenAI histograms."""

    snapshot: MetricsSnapshot = field(default_factory=lambda: MetricsSnapshot(
        tasks_by_status=dict.fromkeys(TASK_STATUSES, 0)))
    genai: list[GenAIHistograms] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        snap = asdict(self.snapshot)
        snap.pop("live_workers")
        return {"snapshot": snap, "genai": [asdict(g) for g in self.genai]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Figures:
        if not data:
            return cls()
        snap = dict(data["snapshot"])
        for name in ("llm_latency", "task_wall"):
            h = snap[name]
            snap[name] = Histogram([(float(b), int(n)) for b, n in h["buckets"]],
                                   int(h["count"]), float(h["total"]))
        genai = [GenAIHistograms(
            operation=g["operation"], model=g["model"], count=int(g["count"]),
            input_tokens=(float(g["input_tokens"][0]), list(g["input_tokens"][1])),
            output_tokens=(float(g["output_tokens"][0]), list(g["output_tokens"][1])),
            duration=(float(g["duration"][0]), list(g["duration"][1])))
            for g in data["genai"]]
        return cls(MetricsSnapshot(**snap), genai)

    def plus(self, other: Figures, sign: int = 1) -> Figures:
        """These figures with ``other``'s added (``sign`` -1: taken away)."""
        a, b = self.snapshot, other.snapshot
        statuses = {**dict.fromkeys(TASK_STATUSES, 0), **a.tasks_by_status}
        for status, n in b.tasks_by_status.items():
            statuses[status] = statuses.get(status, 0) + sign * n
        snap = MetricsSnapshot(
            tasks_by_status=statuses,
            cancel_requested=a.cancel_requested + sign * b.cancel_requested,
            nodes=a.nodes + sign * b.nodes,
            llm_calls=a.llm_calls + sign * b.llm_calls,
            prompt_tokens=a.prompt_tokens + sign * b.prompt_tokens,
            completion_tokens=a.completion_tokens + sign * b.completion_tokens,
            cost_usd=a.cost_usd + sign * b.cost_usd,
            llm_retries=a.llm_retries + sign * b.llm_retries,
            live_workers=a.live_workers,
            llm_latency=_plus_histogram(a.llm_latency, b.llm_latency, sign),
            task_wall=_plus_histogram(a.task_wall, b.task_wall, sign),
        )
        groups = {(g.operation, g.model): g for g in self.genai}
        for g in other.genai:
            mine = groups.get((g.operation, g.model))
            groups[(g.operation, g.model)] = (
                _scaled(g, sign) if mine is None else _plus_genai(mine, g, sign))
        genai = [g for _, g in sorted(groups.items()) if g.count != 0]
        return Figures(snap, genai)


def _plus_counts(a: list[int], b: list[int], sign: int) -> list[int]:
    if not a:
        return [sign * n for n in b]
    return [x + sign * y for x, y in zip(a, b, strict=True)] if b else list(a)


def _plus_histogram(a: Histogram, b: Histogram, sign: int) -> Histogram:
    bounds = [bound for bound, _ in (a.buckets or b.buckets)]
    counts = _plus_counts([n for _, n in a.buckets], [n for _, n in b.buckets], sign)
    return Histogram(list(zip(bounds, counts, strict=True)), a.count + sign * b.count,
                     a.total + sign * b.total)


def _plus_genai(a: GenAIHistograms, b: GenAIHistograms, sign: int) -> GenAIHistograms:
    def pair(x: tuple[float, list[int]], y: tuple[float, list[int]]) -> tuple[float, list[int]]:
        return x[0] + sign * y[0], _plus_counts(x[1], y[1], sign)

    return GenAIHistograms(a.operation, a.model, a.count + sign * b.count,
                           pair(a.input_tokens, b.input_tokens),
                           pair(a.output_tokens, b.output_tokens), pair(a.duration, b.duration))


def _scaled(g: GenAIHistograms, sign: int) -> GenAIHistograms:
    return _plus_genai(GenAIHistograms(g.operation, g.model, 0, (0.0, []), (0.0, []), (0.0, [])),
                       g, sign)


async def aggregate(session: AsyncSession, scope: Any) -> Figures:
    """The figures of the tasks ``scope`` (a condition on ``Task``) selects, from their rows."""
    return Figures(await metrics_snapshot(session, scope), await genai_histograms(session, scope))


async def _lock(session: AsyncSession) -> Figures:
    """The running totals, their row locked until the caller's transaction ends: an UPDATE
    first, so that it is a row lock on PostgreSQL and the write lock at once on SQLite (a
    read that turned into a write later could fail there instead of waiting). The row is
    created when missing."""
    stmt = (update(MetricsRollup).where(MetricsRollup.name == ROLLUP)
            .values(updated_at=utcnow()).returning(MetricsRollup.data))
    found = (await session.execute(stmt)).one_or_none()
    if found is None:
        from sqlalchemy.dialects import postgresql, sqlite

        dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
        await session.execute(dialect.insert(MetricsRollup).values(
            name=ROLLUP, data={}, updated_at=utcnow()).on_conflict_do_nothing())
        found = (await session.execute(stmt)).one()
    return Figures.from_json(dict(found[0] or {}))


async def _store(session: AsyncSession, totals: Figures) -> None:
    await session.execute(update(MetricsRollup).where(MetricsRollup.name == ROLLUP)
                          .values(data=totals.to_json(), updated_at=utcnow()))


async def _fold(session: AsyncSession, totals: Figures, batch: int,
                grace: float) -> tuple[Figures, int]:
    settled = utcnow() - timedelta(seconds=grace)
    ids = list((await session.execute(
        select(Task.id).where(~Task.metrics_folded, Task.status.in_(FINAL_STATUSES),
                              Task.updated_at <= settled).limit(batch))).scalars())
    if not ids:
        return totals, 0
    chosen = Task.id.in_(ids)
    totals = totals.plus(await aggregate(session, chosen))
    # ``updated_at`` kept: the mark is the totals' bookkeeping, not a change of the task
    await session.execute(update(Task).where(chosen)
                          .values(metrics_folded=True, updated_at=Task.updated_at)
                          .execution_options(synchronize_session=False))
    await _store(session, totals)
    return totals, len(ids)


async def fold(session: AsyncSession, *, batch: int = FOLD_BATCH,
               grace: float = FOLD_GRACE) -> int:
    """Fold up to ``batch`` settled finished tasks into the running totals, in the caller's
    transaction (which holds the rollup row's lock from here on); how many were folded."""
    return (await _fold(session, await _lock(session), batch, grace))[1]


async def unfold(session: AsyncSession, scope: Any) -> int:
    """Take the folded ones of the tasks ``scope`` (a condition on ``Task``) selects out of the
    running totals, in the caller's transaction (before it resumes or deletes them); how many
    were folded."""
    totals = await _lock(session)
    chosen = scope & Task.metrics_folded
    folded = int(await session.scalar(select(func.count()).select_from(Task).where(chosen)) or 0)
    if not folded:
        return 0
    totals = totals.plus(await aggregate(session, chosen), -1)
    await session.execute(update(Task).where(chosen).values(metrics_folded=False, updated_at=Task.updated_at)
                          .execution_options(synchronize_session=False))
    await _store(session, totals)
    return folded


async def current(session: AsyncSession, *, batch: int = FOLD_BATCH,
                  grace: float = FOLD_GRACE) -> Figures:
    """One scrape's figures: fold what is settled, then the running totals plus the unfolded
    tasks' rows, read under the rollup lock. Commits (the lock is held until then)."""
    try:
        totals, _ = await _fold(session, await _lock(session), batch, grace)
        figures = totals.plus(await aggregate(session, ~Task.metrics_folded))
        figures.snapshot.live_workers = await live_workers(session)
        await session.commit()
    except BaseException:
        await session.rollback()
        raise
    return figures
