"""Fixtures of the remote environment tests: TextCraft served in this process, and the registry
left as it was found (no remote environment) after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapt.envs import registry
from adapt.envs.textcraft import TextCraft
from adapt.envserve import create_app
from tests.support.envserver import serve_app


@pytest.fixture(autouse=True)
def _no_remote_environments_left() -> Iterator[None]:
    yield
    registry.set_remote({})


@pytest.fixture(scope="module")
def textcraft_url() -> Iterator[str]:
    """``adapt env serve textcraft``'s app on a loopback port of this process."""
    with serve_app(create_app(TextCraft, idle_seconds=600)) as url:
        yield url
