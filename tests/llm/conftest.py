"""Fixtures for the LLM tests: a fake OpenAI-compatible server (:mod:`tests.support.openai_http`)
and its replies, and no ``OPENAI_*`` variables from the environment. Also switches the
real-model guard to "never" (as the root ``conftest.py`` does for every test)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from adapt.llm import guard
from tests.support.openai_http import (
    LOCAL_URL,
    FakeServer,
    chat_body,
    completion_body,
    error_response,
)

guard.forbid_remote()


@pytest.fixture(autouse=True)
def _clean_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def fake_server() -> FakeServer:
    return FakeServer()


@pytest.fixture
def ok_chat() -> Callable[..., httpx.Response]:
    return lambda *a, **kw: httpx.Response(200, json=chat_body(*a, **kw))


@pytest.fixture
def ok_completion() -> Callable[..., httpx.Response]:
    return lambda *a, **kw: httpx.Response(200, json=completion_body(*a, **kw))


@pytest.fixture
def error() -> Callable[..., httpx.Response]:
    return error_response


@pytest.fixture
def local_url() -> str:
    return LOCAL_URL
