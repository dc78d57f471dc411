"""Fixtures of the browser tests: the system Chromium driven by Playwright, a slow simulated
model over HTTP, and real ``adapt serve`` processes (keys off, and keys on)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.simserver import SimServer, start_sim_server, stop_sim_server
from tests.ui.harness import DropProxy, Server, chromium_path, start_server

#: seconds per simulated LLM call: a TextCraft game takes ~20 calls, so trees grow for ~25 s
SLOW_LATENCY = 1.0


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Per module, not per session: Playwright's sync API keeps an event loop running on the
    main thread while it is open, which would break later tests that call ``asyncio.run``."""
    path = chromium_path()
    if path is None:
        why = "no Chromium: install Debian's `chromium` package (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(why)  # CI installs it (.ci/run): a missing browser is a failure there
        pytest.skip(why)
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="pip install -e '.[test]' installs playwright")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    server = start_sim_server(latency=SLOW_LATENCY)
    yield server
    stop_sim_server(server)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sim: SimServer) -> Iterator[Server]:
    s = start_server(tmp_path_factory, sim)
    yield s
    s.stop()


@pytest.fixture
def proxy(server: Server) -> Iterator[DropProxy]:
    p = DropProxy(server.port)
    yield p
    p.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    errors: list[str] = []  # uncaught exceptions in the page's scripts
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.js_errors = errors
    yield page
    context.close()
