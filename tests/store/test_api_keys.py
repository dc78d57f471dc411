"""``adapt.store.api_keys``: the statements on the api_keys table, on SQLite and PostgreSQL."""

from __future__ import annotations

from adapt.store import api_keys
from adapt.store.models import utcnow


async def test_keys_from_insert_to_revoke(sessions) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as s:
        assert not await api_keys.any_ever(s) and not await api_keys.any_active(s)
        await api_keys.insert(s, tenant="acme", name="ci", prefix="0a0b0c0d", key_hash="h1")
        await api_keys.insert(s, tenant="other", name=None, prefix="1a1b1c1d", key_hash="h2")
        assert await api_keys.prefix_taken(s, "0a0b0c0d")
        assert not await api_keys.prefix_taken(s, "ffffffff")
        row = await api_keys.active_by_hash(s, "h1")
        assert row is not None and (row.tenant, row.prefix, row.last_used_at) == (
            "acme", "0a0b0c0d", None)
        used = utcnow()
        await api_keys.touch(s, row.id, used)
        again = await api_keys.active_by_hash(s, "h1")
        assert again is not None and again.last_used_at == used
        assert await api_keys.count_active(s) == 2
        assert await api_keys.revoke(s, "0a0b0c0d")
        assert not await api_keys.revoke(s, "0a0b0c0d")  # revoked already
        assert await api_keys.active_by_hash(s, "h1") is None
        assert await api_keys.count_active(s) == 1
        assert await api_keys.revoke(s, "1a1b1c1d")
        assert await api_keys.any_ever(s) and not await api_keys.any_active(s)
        assert [k.prefix for k in await api_keys.all_keys(s)] == ["0a0b0c0d", "1a1b1c1d"]
        assert [k.name for k in await api_keys.all_keys(s, "acme")] == ["ci"]
