"""API keys: created once (plaintext shown once), stored as a SHA-256 hash, mapped to a tenant.

A key looks like ``adapt_<prefix>_<secret>``: ``prefix`` is 8 hex characters, stored in clear
so a key can be named (``adapt keys revoke <prefix>``) without revealing it; ``secret`` is 43
URL-safe characters. Only ``sha256(secret)`` is stored.

``create_key`` and ``revoke_key`` commit their own transaction (the plaintext is returned only
after the key is durable); ``tenant_for`` records when a key was last used (at most once a
minute per key).

Authentication is sticky: once a key has ever been created, ``auth_required`` stays true, also
after every key is revoked (then every request gets 401 until a key is created or the operator
sets ``ADAPT_AUTH_MODE=off``). Revoked keys stay in the table for that reason.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from adapt.errors import UserError
from adapt.store import api_keys
from adapt.store.models import utcnow

KEY_SCHEME = "adapt"
DEFAULT_TENANT = "default"
#: ``last_used_at`` is written at most this often per key
TOUCH_INTERVAL = timedelta(seconds=60)
_PREFIX_CHARS = 8
_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_KEY_RE = re.compile(r"^adapt_([0-9a-f]{8})_([A-Za-z0-9_-]{16,256})$")


@dataclass(frozen=True)
class KeyInfo:
    """What may be shown about a stored key (never the secret)."""

    prefix: str
    tenant: str
    name: str | None
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None = None


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def parse_key(token: str) -> tuple[str, str] | None:
    """``(prefix, secret)`` of a well-formed key, else None."""
    match = _KEY_RE.match(token.strip())
    return (match.group(1), match.group(2)) if match else None


def validate_tenant(tenant: str) -> str:
    if not _TENANT_RE.match(tenant):
        raise UserError(
            f"invalid tenant name {tenant!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return tenant


async def create_key(session: AsyncSession, tenant: str, name: str | None = None) -> str:
    """Create a key for ``tenant`` and commit; returns the plaintext key (shown only once)."""
    validate_tenant(tenant)
    if name is not None and len(name) > 255:
        raise UserError("key name is too long (at most 255 characters)")
    while True:
        prefix = secrets.token_hex(_PREFIX_CHARS // 2)
        if not await api_keys.prefix_taken(session, prefix):
            break
    secret = secrets.token_urlsafe(32)
    await api_keys.insert(session, tenant=tenant, name=name, prefix=prefix,
                          key_hash=hash_secret(secret))
    return f"{KEY_SCHEME}_{prefix}_{secret}"


async def tenant_for(session: AsyncSession, token: str) -> str | None:
    """The tenant of a valid, unrevoked key; None for anything else (malformed, unknown,
    revoked)."""
    found = await key_for(session, token)
    return None if found is None else found[0]


async def key_for(session: AsyncSession, token: str) -> tuple[str, str] | None:
    """The tenant and the key's id of a valid, unrevoked key (what an approval's audit
    records); None for anything else."""
    parsed = parse_key(token)
    if parsed is None:
        return None
    prefix, secret = parsed
    digest = hash_secret(secret)
    row = await api_keys.active_by_hash(session, digest)
    if row is None or not hmac.compare_digest(row.prefix, prefix):
        return None
    now = utcnow()
    if row.last_used_at is None or now - row.last_used_at >= TOUCH_INTERVAL:
        await api_keys.touch(session, row.id, now)
    return str(row.tenant), str(row.id)


async def any_keys(session: AsyncSession) -> bool:
    """Whether at least one unrevoked key exists."""
    return await api_keys.any_active(session)


async def auth_required(session: AsyncSession) -> bool:
    """Whether a key was ever created (revoked or not): from then on the API needs a key."""
    return await api_keys.any_ever(session)


async def active_keys(session: AsyncSession) -> int:
    """How many unrevoked keys exist."""
    return await api_keys.count_active(session)


async def revoke_key(session: AsyncSession, prefix: str) -> bool:
    """Revoke the key with this prefix (``adapt_<prefix>_...`` or the bare prefix) and commit.

    Returns True when a key was revoked, False when no active key has that prefix.
    """
    bare = prefix.strip()
    if bare.startswith(f"{KEY_SCHEME}_"):
        bare = bare[len(KEY_SCHEME) + 1:].split("_", 1)[0]
    return await api_keys.revoke(session, bare)


async def list_keys(session: AsyncSession, tenant: str | None = None) -> list[KeyInfo]:
    """Every key (optionally of one tenant), oldest first; secrets are never stored."""
    rows = await api_keys.all_keys(session, tenant)
    return [KeyInfo(r.prefix, r.tenant, r.name, r.created_at, r.revoked_at, r.last_used_at)
            for r in rows]
