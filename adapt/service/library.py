"""What the API does with a tenant's experience library (``/library``; docs/experience.md):
list, delete, export and import, always within the caller's tenant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from adapt.envs import registry
from adapt.errors import UnknownEnvironment
from adapt.service.errors import InvalidField, NotFound
from adapt.store import library as store
from adapt.store.library import EntryPage, Imported
from adapt.store.text import UNSTORABLE_MESSAGE, find_unstorable

#: keys an imported entry's origin may have (the import adds one, ``imported``)
MAX_ORIGIN_KEYS = 15


class LibraryService:
    """The experience library of ``tenant``, for one request in ``session``."""

    def __init__(self, session: AsyncSession, tenant: str) -> None:
        self.session = session
        self.tenant = tenant

    async def page(self, *, offset: int, limit: int, environment: str | None,
                   dropped: bool) -> EntryPage:
        return await store.page(self.session, self.tenant, offset=offset, limit=limit,
                                environment=environment, dropped=dropped)

    async def delete(self, entry_id: int) -> None:
        if not await store.remove(self.session, self.tenant, entry_id):
            raise NotFound("library entry", entry_id)

    async def export(self, environment: str | None) -> dict[str, Any]:
        return await store.export(self.session, self.tenant, environment)

    async def import_entries(self, entries: Sequence[Mapping[str, Any]]) -> Imported:
        """Add validated export entries; every entry is checked (storable text, a registered
        environment) before any is added: ``InvalidField`` names the first bad one."""
        bad = find_unstorable(list(entries), "entries")
        if bad:
            raise InvalidField(bad, UNSTORABLE_MESSAGE)
        for i, entry in enumerate(entries):
            if len(entry.get("origin") or {}) > MAX_ORIGIN_KEYS:
                raise InvalidField(f"entries.{i}.origin",
                                   f"at most {MAX_ORIGIN_KEYS} keys (an import adds 'imported')")
            try:
                registry.get(str(entry["environment"]))
            except UnknownEnvironment as exc:
                raise InvalidField(f"entries.{i}.environment", str(exc)) from None
        return await store.import_entries(self.session, self.tenant, [dict(e) for e in entries])


__all__ = ["MAX_ORIGIN_KEYS", "LibraryService"]
