"""Issue 14: schemathesis fuzzes the app against its own OpenAPI document, with and without an
API key, on SQLite and PostgreSQL: no server errors, no responses that break the document
(status codes, content types, headers, schemas), invalid data always rejected. Bounded examples
and a fixed seed; `-m slow` runs more examples.

Positive-data acceptance is not checked: a schema-valid request may still be refused for what a
schema cannot say (the operator's model endpoints, budgets, rate limits)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance
from starlette.testclient import TestClient

from adapt.service import auth
from adapt.store.db import create_engine, session_factory
from adapt.store.migrate import upgrade
from api.main import create_app
from tests.support.api import FakeDispatcher, make_settings
from tests.support.databases import postgres_database

EXAMPLES = int(os.environ.get("ADAPT_SCHEMATHESIS_EXAMPLES", "12"))


async def _create_key(url: str) -> str:
    engine = create_engine(url)
    try:
        async with session_factory(engine)() as session:
            return await auth.create_key(session, "fuzz")
    finally:
        await engine.dispose()


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
@pytest.mark.parametrize("with_key", [False, True], ids=["open", "key"])
def test_the_api_keeps_its_openapi_promises(database: str, with_key: bool,
                                            tmp_path: Path) -> None:
    with (postgres_database() if database == "postgres" else _sqlite(tmp_path)) as url:
        upgrade(url)
        headers = ({"Authorization": f"Bearer {asyncio.run(_create_key(url))}"} if with_key
                   else {})
        app = create_app(make_settings(url), dispatcher=FakeDispatcher())
        with TestClient(app):  # the lifespan runs while the operations are fuzzed
            api = schemathesis.openapi.from_asgi("/openapi.json", app)
            operations = [result.ok() for result in api.get_all_operations()]
            assert len(operations) >= 8
            for operation in operations:
                _fuzz(operation, headers)


def _fuzz(operation: Any, headers: dict[str, str]) -> None:
    @seed(14)
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
              database=None)
    @given(case=operation.as_strategy())
    def run(case: Any) -> None:
        case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance])

    run()


class _sqlite:
    def __init__(self, folder: Path) -> None:
        self.url = f"sqlite:///{folder / 'adapt.db'}"

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc: object) -> None:
        pass
