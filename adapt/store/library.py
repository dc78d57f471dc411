"""Every statement on ``library_entries``: a tenant's experience library in the database, and
:class:`DbLibrary`, the engine's ``ExperienceLibrary`` for one task of one tenant.

A tenant's entries are never seen by another: every statement takes the tenant. A task looks
entries up as of the time its first attempt started (``as_of``): an entry created later, or
dropped before, is not found, so a resumed attempt finds what the first one found (its replay
then matches the recording). Entries are dropped (``dropped_at``), not deleted, when they keep
failing; ``DELETE /library/{id}`` deletes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.experience import (
    DROP_AFTER,
    EXPORT_FIELDS,
    EXPORT_FORMAT,
    EXPORT_VERSION,
    SKILL,
    ExperienceReport,
    Solution,
    goal_key,
)
from adapt.store.models import LibraryEntry, utcnow
from adapt.store.text import storable


def _live(tenant: str, as_of: datetime | None = None) -> Any:
    if as_of is None:
        return and_(LibraryEntry.tenant == tenant, LibraryEntry.dropped_at.is_(None))
    return and_(LibraryEntry.tenant == tenant, LibraryEntry.created_at <= as_of,
                or_(LibraryEntry.dropped_at.is_(None), LibraryEntry.dropped_at > as_of))


async def find(session: AsyncSession, tenant: str, environment: str, key: str, *,
               as_of: datetime | None = None, exclude: Iterable[int] = (),
               kind: str = SKILL) -> LibraryEntry | None:
    """The oldest live entry of ``kind`` of ``tenant`` for ``environment`` and goal key
    ``key`` (exact; ``adapt.engine.experience.key_of``) as of ``as_of`` (``None``: now), not
    one of ``exclude``."""
    stmt = (select(LibraryEntry)
            .where(_live(tenant, as_of), LibraryEntry.environment == environment,
                   LibraryEntry.goal_key == key, LibraryEntry.kind == kind)
            .order_by(LibraryEntry.created_at, LibraryEntry.id).limit(1))
    skip = list(exclude)
    if skip:
        stmt = stmt.where(LibraryEntry.id.not_in(skip))
    return (await session.execute(stmt)).scalar_one_or_none()


async def live_keys(session: AsyncSession, tenant: str,
                    keys: Iterable[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    """Which (environment, goal key, kind) of ``keys`` have a live entry of ``tenant`` now."""
    wanted = set(keys)
    if not wanted:
        return set()
    envs = {env for env, _, _ in wanted}
    rows = await session.execute(
        select(LibraryEntry.environment, LibraryEntry.goal_key, LibraryEntry.kind)
        .where(_live(tenant), LibraryEntry.environment.in_(envs),
               LibraryEntry.goal_key.in_({key for _, key, _ in wanted})))
    return {(env, key, kind) for env, key, kind in rows.all()} & wanted


async def apply(session: AsyncSession, tenant: str, report: ExperienceReport,
                task_id: str | None) -> None:
    """What a task run learned (new entries, one live entry per goal) and how its replays
    went (uses, failures; an entry failing ``DROP_AFTER`` times in a row is dropped); commits."""
    now = utcnow()
    mine = LibraryEntry.tenant == tenant
    for entry_id in report.used:
        await session.execute(update(LibraryEntry).where(mine, LibraryEntry.id == entry_id)
                              .values(uses=LibraryEntry.uses + 1, failure_streak=0,
                                      last_used_at=now))
    for entry_id in report.failed:
        await session.execute(update(LibraryEntry).where(mine, LibraryEntry.id == entry_id)
                              .values(failures=LibraryEntry.failures + 1,
                                      failure_streak=LibraryEntry.failure_streak + 1))
    await session.execute(update(LibraryEntry).where(
        mine, LibraryEntry.dropped_at.is_(None), LibraryEntry.failure_streak >= DROP_AFTER)
        .values(dropped_at=now))
    taken = await live_keys(session, tenant, ((x.environment, storable(x.key), x.kind)
                                              for x in report.learned))
    for item in report.learned:
        key = (item.environment, storable(item.key), item.kind)
        if key in taken:
            continue
        taken.add(key)
        session.add(LibraryEntry(  # model output: made storable (no NUL, no lone surrogate)
            tenant=tenant, environment=item.environment, goal=storable(item.goal),
            goal_key=key[1], kind=item.kind, actions=storable(list(item.actions)),
            logic=None if item.logic is None else storable(item.logic),
            origin={"task": task_id, "node": item.node_id}, model=item.model,
            simulated=item.simulated, uses=0, failures=0, failure_streak=0, created_at=now))
    await session.commit()


@dataclass(frozen=True, slots=True)
class EntryPage:
    rows: Sequence[LibraryEntry]
    total: int


async def page(session: AsyncSession, tenant: str, *, offset: int = 0, limit: int = 50,
               environment: str | None = None, dropped: bool = False) -> EntryPage:
    """``tenant``'s entries, newest first (``dropped``: the dropped ones too), and how many."""
    where = [LibraryEntry.tenant == tenant]
    if not dropped:
        where.append(LibraryEntry.dropped_at.is_(None))
    if environment is not None:
        where.append(LibraryEntry.environment == environment)
    total = await session.scalar(select(func.count()).select_from(LibraryEntry).where(*where))
    rows = (await session.execute(
        select(LibraryEntry).where(*where).order_by(LibraryEntry.id.desc())
        .offset(offset).limit(limit))).scalars().all()
    return EntryPage(rows, int(total or 0))


async def get(session: AsyncSession, tenant: str, entry_id: int) -> LibraryEntry | None:
    return (await session.execute(select(LibraryEntry).where(
        LibraryEntry.tenant == tenant, LibraryEntry.id == entry_id))).scalar_one_or_none()


async def remove(session: AsyncSession, tenant: str, entry_id: int) -> bool:
    """Delete ``tenant``'s entry ``entry_id`` and commit; whether there was one."""
    result = await session.execute(delete(LibraryEntry).where(
        LibraryEntry.tenant == tenant, LibraryEntry.id == entry_id).returning(LibraryEntry.id))
    found = result.first() is not None
    await session.commit()
    return found


async def export(session: AsyncSession, tenant: str,
                 environment: str | None = None) -> dict[str, Any]:
    """``tenant``'s live entries as the export document (oldest first)."""
    where = [_live(tenant)]
    if environment is not None:
        where.append(LibraryEntry.environment == environment)
    rows = (await session.execute(select(LibraryEntry).where(*where)
                                  .order_by(LibraryEntry.id))).scalars().all()
    return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION,
            "entries": [{f: getattr(row, f) for f in EXPORT_FIELDS} for row in rows]}


@dataclass(frozen=True, slots=True)
class Imported:
    added: int
    #: goals that already had a live entry (the existing one is kept)
    skipped: int


async def import_entries(session: AsyncSession, tenant: str,
                         entries: Sequence[dict[str, Any]]) -> Imported:
    """Add exported ``entries`` (validated by the caller) to ``tenant``'s library, each as a
    new entry whose origin says it was imported; a goal with a live entry keeps it. Commits."""
    now = utcnow()
    keys = [(e["environment"], e.get("goal_key") or goal_key(e["goal"]), e.get("kind") or SKILL)
            for e in entries]
    taken = await live_keys(session, tenant, keys)
    added = 0
    for e, key in zip(entries, keys, strict=True):
        if key in taken:
            continue
        taken.add(key)
        added += 1
        session.add(LibraryEntry(
            tenant=tenant, environment=e["environment"], goal=e["goal"], goal_key=key[1],
            kind=key[2], actions=list(e["actions"]), logic=e.get("logic"), origin={**(e.get("origin") or {}), "imported": True},
            model=e.get("model"), simulated=bool(e.get("simulated")),
            uses=int(e.get("uses") or 0), failures=int(e.get("failures") or 0),
            failure_streak=0, created_at=now))
    await session.commit()
    return Imported(added, len(entries) - added)


def solution(row: LibraryEntry) -> Solution:
    return Solution(row.id, row.environment, row.goal, tuple(row.actions), dict(row.origin),
                    row.simulated, row.model, row.kind, row.logic)


class DbLibrary:
    """The experience library of ``tenant`` for one task (``task_id``), as of ``as_of`` (the
    time the task's first attempt started)."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], tenant: str,
                 task_id: str | None, as_of: datetime | None) -> None:
        self.sessions = sessions
        self.tenant = tenant
        self.task_id = task_id
        self.as_of = as_of

    async def find(self, environment: str, key: str,
                   exclude: frozenset[int] = frozenset(), kind: str = SKILL
                   ) -> Solution | None:
        async with self.sessions() as session:
            row = await find(session, self.tenant, environment, key, as_of=self.as_of,
                             exclude=exclude, kind=kind)
            return None if row is None else solution(row)

    async def save(self, report: ExperienceReport) -> None:
        async with self.sessions() as session:
            await apply(session, self.tenant, report, self.task_id)


__all__ = ["EXPORT_FIELDS", "EXPORT_FORMAT", "EXPORT_VERSION", "DbLibrary", "EntryPage",
           "Imported", "apply", "export", "find", "get", "import_entries", "page", "remove",
           "solution"]
