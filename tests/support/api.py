"""What the API tests build apps with: settings on a database, and a dispatcher that records
the ids it is told (in place of Celery or the embedded runner)."""

from __future__ import annotations

from typing import Any

from adapt.settings import Settings


class FakeDispatcher:
    def __init__(self) -> None:
        self.dispatched: list[str] = []
        self.is_ready = True
        self.closed = False

    async def dispatch(self, task_id: str) -> None:
        self.dispatched.append(task_id)

    async def ready(self) -> bool:
        return self.is_ready

    async def aclose(self) -> None:
        self.closed = True


def make_settings(database_url: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "ADAPT_DATABASE_URL": database_url,
        "broker_url": "redis://127.0.0.1:1/0",  # not embedded: no migrations at start-up
        "max_body_bytes": 65536,
        "llm_endpoints": ["http://127.0.0.1:11434/v1"],  # a local server users may name
    }
    values.update(extra)
    return Settings.model_validate(values)
