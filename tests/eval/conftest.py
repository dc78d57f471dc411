"""Fixtures of the bench tests: the SQL and Bash benches use their environments' ones; every
model the settings build can be recorded (``recorded_requests``)."""

import pytest

from adapt.llm.base import ChatRequest
from tests.support.bash_data import bash_cache, bash_data, bash_layers  # noqa: F401
from tests.support.models import record_models
from tests.support.sqldb import data_dir, server  # noqa: F401


@pytest.fixture
def recorded_requests(monkeypatch: pytest.MonkeyPatch) -> list[ChatRequest]:
    return record_models(monkeypatch)
