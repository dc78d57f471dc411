"""``/docs``: Swagger UI from files installed with the app (the ``swagger-ui-py`` package ships
Swagger UI 5), so the page works without reaching a CDN."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC_PREFIX = "/docs/static"


def _assets() -> Path:
    return Path(str(resources.files("swagger_ui").joinpath("static")))


def install(app: FastAPI) -> None:
    app.mount(STATIC_PREFIX, StaticFiles(directory=_assets()), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} - API",
            swagger_js_url=f"{STATIC_PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC_PREFIX}/favicon-32x32.png",
        )
