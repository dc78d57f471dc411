from __future__ import annotations

import pytest

from tests.engine.toy import ToyEnv


@pytest.fixture
def env() -> ToyEnv:
    return ToyEnv()
