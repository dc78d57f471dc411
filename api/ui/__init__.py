"""The tree viewer: a browser UI served at ``/ui`` (``/`` redirects there).

The pages are static files shipped inside this package (``static/``: plain JavaScript modules
and CSS, no build step, nothing fetched from a CDN). They talk to the server only through the
public HTTP API, with the same requests a ``curl`` user would send. Every page path under
``/ui`` answers the same ``index.html``; the script routes on the URL:

- ``/ui`` tasks list, ``/ui/new`` new task, ``/ui/compare?a=ID&b=ID`` compare two tasks,
- ``/ui/tasks/{id}`` a task (``?node=N`` opens node N's panel, ``?view=timeline`` the timeline).

The HTML is public (it holds no data); every API call it makes carries the API key the user
typed, kept in the tab's ``sessionStorage`` only.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(str(resources.files(__name__).joinpath("static")))

#: no inline script or style, no other origin: a goal or completion that contains markup can
#: never run as script even if it reached the DOM as HTML (the pages only ever set text)
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",  # frame-ancestors for browsers that predate it
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


def _index() -> Response:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html",
                        headers=PAGE_HEADERS)


@router.get("/")
async def root() -> RedirectResponse:
    return RedirectResponse("/ui", status_code=307)


@router.get("/ui")
@router.get("/ui/")
@router.get("/ui/new")
@router.get("/ui/compare")
async def page() -> Response:
    return _index()


@router.get("/ui/tasks/{task_id}")
async def task_page(task_id: str) -> Response:
    return _index()


class _StaticFiles(StaticFiles):
    """Static assets with the pages' security headers and revalidation (no stale scripts
    after an upgrade)."""

    def file_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        response = super().file_response(*args, **kwargs)
        response.headers.update(PAGE_HEADERS)
        return response


def install(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/ui/static", _StaticFiles(directory=STATIC_DIR), name="ui-static")
