"""The viewer on a server that requires API keys: the page asks for one, keeps it for the tab's
session only (sessionStorage), sends it in the Authorization header (never in a URL, also for
the live event stream), and a refused key is asked for again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.simserver import SimServer
from tests.ui.harness import Server, slow_task, start_server, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory,
          sim: SimServer) -> Iterator[tuple[Server, str]]:
    s = start_server(tmp_path_factory, sim)  # migrates the database
    key = s.create_key("ui")  # the first key switches authentication on
    yield s, key
    s.stop()


def test_keys_asked_for_kept_per_session_and_never_in_urls(
    browser: Any, keyed: tuple[Server, str], sim: SimServer,
) -> None:
    server, key = keyed
    other = server.create_key("someone-else")
    theirs = server.submit(slow_task(sim, seed=3, executor={"model": "sim:textcraft"}), key=other)
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    urls: list[str] = []
    authorized: list[str] = []
    page.on("request", lambda r: urls.append(r.url))
    page.on("request", lambda r: authorized.append(r.url) if "authorization" in r.headers else None)
    try:
        page.goto(f"{server.url}/ui")
        page.wait_for_selector("#key-dialog[open]")
        page.fill("#api-key-input", "adapt_wrong_key")
        page.click("#key-dialog button[value=save]")
        page.wait_for_selector("#key-dialog[open] .key-message:not([hidden])")
        assert "refused" in page.inner_text("#key-dialog .key-message")
        page.fill("#api-key-input", key)
        page.click("#key-dialog button[value=save]")
        page.wait_for_selector("main[data-loaded]")
        # a task submitted now shows up in the (polling) list; the other tenant's never does
        task = server.submit(slow_task(sim, seed=11), key=key)
        page.wait_for_selector(f"tr[data-task-id='{task['id']}']")
        assert page.locator(f"tr[data-task-id='{theirs['id']}']").count() == 0

        # the live tree streams with the key in a header
        page.click(f"tr[data-task-id='{task['id']}'] a")
        page.wait_for_selector(".live[data-state=live]")
        first = wait_for(lambda: page.locator(".tree-row").count(), 60, "a node")
        wait_for(lambda: page.locator(".tree-row").count() > first, 90, "nodes arriving live")
        assert any(u.endswith(f"/tasks/{task['id']}/events") for u in authorized)
        assert not [u for u in urls if key in u or "adapt_" in u]

        # kept for this tab's session: not in localStorage or cookies; a new session asks again
        assert page.evaluate("sessionStorage.getItem('adapt.apiKey')") == key
        assert page.evaluate("JSON.stringify(localStorage)") == "{}"
        assert context.cookies() == []
        page.reload()
        page.wait_for_selector(".tree-row")
        assert page.locator("#key-dialog[open]").count() == 0
        fresh = browser.new_context()
        try:
            other_page = fresh.new_page()
            other_page.goto(f"{server.url}/ui/tasks/{task['id']}")
            other_page.wait_for_selector("#key-dialog[open]")
        finally:
            fresh.close()

        # copied curl commands name the variable, not the key
        page.click(".title-line button.curl")
        command = page.input_value(".curl-text")
        assert "$ADAPT_API_KEY" in command and key not in command

        # forgetting the key ends access from this tab
        page.click("#forget-key")
        page.wait_for_selector("#key-dialog[open]")
        assert page.evaluate("sessionStorage.getItem('adapt.apiKey')") is None
    finally:
        context.close()
