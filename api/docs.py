"""``/docs``: Swagger UI from files installed with the app (the ``swagger-ui-py`` package ships
Swagger UI 5), so the page works without reaching a CDN.

The page and its assets carry a Content-Security-Policy like the viewer's: scripts only from
this server, plus the one inline script that starts Swagger UI, allowed by its SHA-256 hash;
requests only to this server; no framing (``frame-ancestors 'none'``, ``X-Frame-Options``), so
another site cannot overlay the page's "Try it out" buttons. ``/redoc`` is not served.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC_PREFIX = "/docs/static"

#: Swagger UI's options; no validator badge (an image fetched from swagger.io)
SWAGGER_PARAMETERS: dict[str, Any] = {"validatorUrl": None}

_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)

#: headers of every response under /docs
BASE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def content_security_policy(html: str) -> str:
    """The page's policy: its inline scripts are allowed by hash, nothing else inline."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in _INLINE_SCRIPT.findall(html))
    return (f"default-src 'self'; script-src 'self' {hashes}; style-src 'self'; "
            "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")


def _assets() -> Path:
    return Path(str(resources.files("swagger_ui").joinpath("static")))


class _StaticFiles(StaticFiles):
    """Swagger UI's files with the pages' headers."""

    def file_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        response = super().file_response(*args, **kwargs)
        response.headers.update(BASE_HEADERS)
        return response


def install(app: FastAPI) -> None:
    app.mount(STATIC_PREFIX, _StaticFiles(directory=_assets()), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} - API",
            swagger_js_url=f"{STATIC_PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC_PREFIX}/favicon-32x32.png",
            swagger_ui_parameters=SWAGGER_PARAMETERS,
        )
        html = bytes(page.body).decode()
        page.headers.update({**BASE_HEADERS, "Cache-Control": "no-cache",
                             "Content-Security-Policy": content_security_policy(html)})
        return page
