"""Issue 14, "the API says what it does": strict types, one status per body-parsing failure,
405 lists every allowed method, and the OpenAPI document matches (problem+json errors,
400/413/415 documented, an optional security scheme while open, an integer Last-Event-ID)."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import pytest

from tests.security.service import service
from tests.support.api import FakeDispatcher

QUEUED = {"broker_url": "redis://127.0.0.1:1/0"}


@pytest.mark.parametrize(("body", "field"), [
    ({"d_max": True}, "d_max"), ({"d_max": "3"}, "d_max"), ({"seed": "1"}, "seed"),
    ({"budget": {"max_llm_calls": "5"}}, "budget.max_llm_calls"),
    ({"executor": {"max_steps": 2.0}}, "executor.max_steps"),
    ({"monitor": {"enabled": "yes"}}, "monitor.enabled"),
])
async def test_types_are_strict(database_url: str, body: dict[str, Any], field: str) -> None:
    async with service(database_url, dispatcher=FakeDispatcher(), **QUEUED) as client:
        response = await client.post("/tasks", json={"environment": "textcraft", **body})
        assert response.status_code == 422, response.text
        assert [e["field"] for e in response.json()["errors"]] == [field]


async def test_405_lists_every_method_of_the_path(database_url: str) -> None:
    async with service(database_url, dispatcher=FakeDispatcher(), **QUEUED) as client:
        response = await client.delete("/tasks")
        assert response.status_code == 405
        assert response.headers["allow"] == "GET, HEAD, POST"
        assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(("mode", "optional"), [("auto", True), ("off", True), ("keys", False)])
async def test_openapi_matches_behaviour(database_url: str, mode: str, optional: bool) -> None:
    async with service(database_url, dispatcher=FakeDispatcher(), auth_mode=mode,
                       **QUEUED) as client:
        doc = (await client.get("/openapi.json")).json()
    create = doc["paths"]["/tasks"]["post"]
    for status in ("400", "401", "409", "413", "415", "422", "429"):
        assert list(create["responses"][status]["content"]) == ["application/problem+json"]
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    assert ({} in create["security"]) is optional
    events = doc["paths"]["/tasks/{task_id}/events"]["get"]
    header = next(p for p in events["parameters"] if p["name"] == "Last-Event-ID")
    assert header["schema"]["anyOf"][0]["type"] == "integer"
    assert "text/event-stream" in events["responses"]["200"]["content"]


async def test_docs_are_served_by_the_app_without_a_cdn(database_url: str) -> None:
    async with service(database_url, dispatcher=FakeDispatcher(), **QUEUED) as client:
        page = await client.get("/docs")
        assert page.status_code == 200
        assert "cdn" not in page.text.lower() and "https://" not in page.text
        for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
            assert f"/docs/static/{asset}" in page.text
            served = await client.get(f"/docs/static/{asset}")
            assert served.status_code == 200 and len(served.content) > 10_000


async def test_docs_forbid_framing_and_allow_only_their_own_scripts(database_url: str) -> None:
    """Issue 27: /docs and its assets carry a CSP (no framing, scripts from the server plus
    the page's one inline script, by hash), X-Frame-Options and nosniff; /redoc is not
    served."""
    async with service(database_url, dispatcher=FakeDispatcher(), **QUEUED) as client:
        page = await client.get("/docs")
        csp = page.headers["content-security-policy"]
        directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
        assert directives["frame-ancestors"] == "'none'"
        assert directives["default-src"] == "'self'"
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["x-content-type-options"] == "nosniff"
        inline = re.findall(r"<script>(.*?)</script>", page.text, re.DOTALL)
        assert len(inline) == 1  # the call that starts Swagger UI
        digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
        assert directives["script-src"].split() == ["'self'", f"'sha256-{digest}'"]
        assert '"validatorUrl": null' in inline[0]  # no badge fetched from swagger.io
        asset = await client.get("/docs/static/swagger-ui-bundle.js")
        assert asset.headers["x-content-type-options"] == "nosniff"
        assert (await client.get("/redoc")).status_code == 404


async def test_openapi_documents_the_edge_refusals(database_url: str) -> None:
    async with service(database_url, dispatcher=FakeDispatcher(), **QUEUED) as client:
        doc = (await client.get("/openapi.json")).json()
    cancel = doc["paths"]["/tasks/{task_id}/cancel"]["post"]["responses"]
    assert {"403", "415", "421"} <= set(cancel)
    events = doc["paths"]["/tasks/{task_id}/events"]["get"]["responses"]
    assert "421" in events and "429" in events and "403" not in events
    assert "408" in doc["paths"]["/tasks"]["post"]["responses"]
