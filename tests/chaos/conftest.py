"""One private PostgreSQL and one private Redis for the chaos tests (started from the machine's
binaries on free ports, data in temporary directories; the machine's own servers are never
touched)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos.infra import PrivatePostgres, PrivateRedis
from tests.chaos.scenarios import servers


@pytest.fixture(scope="session")
def private_servers(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[PrivatePostgres, PrivateRedis]]:
    with servers(tmp_path_factory.mktemp("chaos")) as pair:
        yield pair


@pytest.fixture
def chaos_dir(tmp_path: Path) -> Path:
    return tmp_path
