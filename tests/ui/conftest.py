"""Fixtures of the browser tests: the system Chromium driven by Playwright, a slow simulated
model over HTTP, and real ``adapt serve`` processes (keys off, and keys on)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.simserver import SimServer, start_sim_server, stop_sim_server
from tests.ui.harness import DropProxy, Server, chromium_path

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


#: the executor kind a plug-in package adds (an entry point in ``adapt.executors``)
PLUGIN_EXECUTOR = "plugged"


def plugin_package(root: Path) -> Path:
    """An installed plug-in package, as pip leaves one: a ``.dist-info`` with an entry point
    that adds an executor kind (the ReAct executor under another name). Put ``root`` on the
    server's ``PYTHONPATH`` to install it there."""
    info = root / "adapt_ui_plugin-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: adapt-ui-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[adapt.executors]\n{PLUGIN_EXECUTOR} = adapt.engine.executors.react:ReActExecutor\n")
    return root


def start_server(tmp_path_factory: pytest.TempPathFactory, sim: SimServer) -> Server:
    """``adapt serve`` that may call the simulated model's endpoint (the operator's list), with
    a plug-in executor installed."""
    s = Server(Path(tmp_path_factory.mktemp("serve")))
    plugins = plugin_package(Path(tmp_path_factory.mktemp("plugins")))
    path = os.pathsep.join(p for p in (str(plugins), os.environ.get("PYTHONPATH", "")) if p)
    s.start(ADAPT_LLM_ENDPOINTS=json.dumps([sim.base_url]), PYTHONPATH=path)
    return s


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


def slow_task(sim: SimServer, seed: int = 11, **extra: Any) -> dict[str, Any]:
    model = f"openai:sim:textcraft?capability=1@{sim.base_url}"
    return {"environment": "textcraft", "environment_config": {"seed": seed}, "d_max": 4,
            "executor": {"model": model}, **extra}
