"""Issue 27 in a real browser: /docs renders under its Content-Security-Policy (and "Try it
out" reaches the API) but not inside another site's frame; a page whose name now resolves to
127.0.0.1 (DNS rebinding) reads and creates nothing; a form on another site cannot cancel a
task. The attacker's names resolve to 127.0.0.1 inside Chromium only (its resolver rules), and
the attacker's pages are served by Playwright: no traffic leaves the machine."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.simserver import SimServer
from tests.ui.harness import Server, chromium_path, slow_task, wait_for

pytestmark = pytest.mark.slow

ATTACKER = "attacker.test"
REBOUND = f"rebind.{ATTACKER}"
PNA_FEATURES = ("LocalNetworkAccessChecks", "PrivateNetworkAccessRespectPreflightResults",
                "BlockInsecurePrivateNetworkRequests")

#: every Content-Security-Policy violation the page reports, kept for the test to read
VIOLATIONS_JS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """conftest's browser, in which the attacker's names resolve to 127.0.0.1: what a DNS
    rebinding attack achieves once the page is loaded (one Playwright per module)."""
    path = chromium_path()
    if path is None:
        why = "no Chromium: install Debian's `chromium` package (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="pip install -e '.[test]' installs playwright")
    rules = f"MAP {ATTACKER} 127.0.0.1, MAP *.{ATTACKER} 127.0.0.1"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=[
            "--no-sandbox", f"--host-resolver-rules={rules}",
            # Chromium's own guard (Private Network Access) would refuse the rebound page's
            # requests before they reach the server; Firefox and Safari have none
            f"--disable-features={','.join(PNA_FEATURES)}"])
        yield browser
        browser.close()


def serve_page(page: Any, url: str, html: str) -> None:
    """The attacker's page at ``url`` (served by Playwright, never by adapt)."""
    page.route(url, lambda route: route.fulfill(status=200, content_type="text/html",
                                                body=html))


def test_docs_render_and_try_requests_under_their_csp(page: Any, server: Server) -> None:
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text)
            if "Content Security Policy" in m.text else None)
    page.add_init_script(VIOLATIONS_JS)
    response = page.goto(f"{server.url}/docs")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    # the operations are drawn from /openapi.json: the bundle and the inline start-up ran
    page.locator(".opblock-summary-path[data-path='/healthz']").click()
    page.locator("button.try-out__btn").click()
    page.locator("button.execute").click()
    status = page.locator(".live-responses-table tbody .response-col_status").first
    status.wait_for(timeout=15_000)
    assert status.inner_text().strip() == "200"
    assert page.evaluate("window.__violations") == []
    assert violations == [] and page.js_errors == []


def test_docs_are_not_shown_inside_another_sites_frame(page: Any,
                                                       server: Server) -> None:
    frame_page = f"http://{ATTACKER}:{server.port}/frame"
    serve_page(page, frame_page,
               f'<iframe id="f" src="{server.url}/docs" width="800" height="600"></iframe>')
    page.goto(frame_page)
    page.wait_for_timeout(2000)  # time for Swagger UI to draw, were it allowed
    framed = [f for f in page.frames if f != page.main_frame]
    assert framed, "the iframe was not created"
    for frame in framed:
        drawn = frame.url.startswith(server.url) and frame.evaluate(
            "!!document.querySelector('.swagger-ui .info')")
        assert not drawn, frame.url


def test_a_page_whose_name_was_rebound_reads_and_creates_nothing(
        page: Any, server: Server) -> None:
    origin = f"http://{REBOUND}:{server.port}"
    serve_page(page, f"{origin}/attack", "<p>a harmless-looking page</p>")
    page.goto(f"{origin}/attack")
    tasks, hook = page.evaluate("""async () => {
      const tasks = await fetch('/tasks');
      const hook = await fetch('/webhooks', {method: 'POST',
        headers: {'content-type': 'application/json'},
        body: JSON.stringify({url: 'https://hooks.example.com/steal'})});
      return [tasks.status, hook.status];
    }""")
    assert (tasks, hook) == (421, 421)
    assert server.get("/webhooks")["items"] == []


@pytest.mark.parametrize("enctype", ["application/x-www-form-urlencoded", "text/plain"])
def test_a_form_on_another_site_cannot_cancel_a_task(page: Any, server: Server,
                                                     sim: SimServer, enctype: str) -> None:
    task = server.submit(slow_task(sim, seed=5))
    target = f"{server.url}/tasks/{task['id']}/cancel"
    form_page = f"http://{ATTACKER}:{server.port}/win-a-prize"
    serve_page(page, form_page,
               f'<form id="f" method="POST" action="{target}" enctype="{enctype}">'
               '<input name="x" value="1"></form>'
               "<script>document.getElementById('f').submit()</script>")
    with page.expect_navigation(url=target) as navigation:
        page.goto(form_page)
    assert navigation.value.status == 403
    assert "cross-site" in page.content()
    assert server.get(f"/tasks/{task['id']}")["status"] != "cancelled"
    assert httpx.post(target, timeout=10).status_code == 200  # no Origin (curl): allowed
    wait_for(lambda: server.get(f"/tasks/{task['id']}")["status"] == "cancelled", 15,
             "the task to be cancelled")
