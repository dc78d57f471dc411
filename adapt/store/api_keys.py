"""Every statement on the ``api_keys`` table (the rules, hashing and key format are in
``adapt.service.auth``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.store.models import ApiKey, utcnow


async def prefix_taken(session: AsyncSession, prefix: str) -> bool:
    found = await session.scalar(select(ApiKey.id).where(ApiKey.prefix == prefix).limit(1))
    return found is not None


async def insert(session: AsyncSession, *, tenant: str, name: str | None, prefix: str,
                 key_hash: str) -> None:
    """Store a new key and commit."""
    session.add(ApiKey(id=uuid.uuid4().hex, tenant=tenant, name=name, prefix=prefix,
                       key_hash=key_hash, created_at=utcnow()))
    await session.commit()


async def active_by_hash(
    session: AsyncSession, key_hash: str
) -> Row[str, str, str, datetime | None] | None:
    """(id, tenant, prefix, last_used_at) of the unrevoked key with this hash."""
    return (await session.execute(
        select(ApiKey.id, ApiKey.tenant, ApiKey.prefix, ApiKey.last_used_at)
        .where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None))
    )).one_or_none()


async def touch(session: AsyncSession, key_id: str, when: datetime) -> None:
    """Record that the key was used at ``when``, and commit."""
    await session.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=when))
    await session.commit()


async def any_active(session: AsyncSession) -> bool:
    found = await session.scalar(select(ApiKey.id).where(ApiKey.revoked_at.is_(None)).limit(1))
    return found is not None


async def any_ever(session: AsyncSession) -> bool:
    """Whether a key was ever created (revoked keys stay in the table)."""
    return await session.scalar(select(ApiKey.id).limit(1)) is not None


async def count_active(session: AsyncSession) -> int:
    rows = await session.execute(select(ApiKey.id).where(ApiKey.revoked_at.is_(None)))
    return len(rows.all())


async def revoke(session: AsyncSession, prefix: str) -> bool:
    """Revoke the unrevoked key with this prefix and commit; whether there was one."""
    result = await session.execute(
        update(ApiKey)
        .where(ApiKey.prefix == prefix, ApiKey.revoked_at.is_(None))
        .values(revoked_at=utcnow())
        .returning(ApiKey.id)
    )
    revoked = result.first() is not None
    await session.commit()
    return revoked


async def all_keys(session: AsyncSession, tenant: str | None = None) -> Sequence[ApiKey]:
    """Every key (optionally of one tenant), oldest first."""
    stmt = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
    if tenant is not None:
        stmt = stmt.where(ApiKey.tenant == tenant)
    return (await session.execute(stmt)).scalars().all()
