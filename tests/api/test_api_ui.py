"""The tree viewer's HTTP side: ``/`` redirects to ``/ui``, every page path answers the same
HTML with a strict Content-Security-Policy, and the static assets ship inside the package."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from api.ui import STATIC_DIR
from tests.api.test_api_auth import new_key


async def test_root_redirects_to_the_ui(client: httpx.AsyncClient) -> None:
    response = await client.get("/")
    assert response.status_code == 307 and response.headers["location"] == "/ui"


async def test_page_paths_serve_the_app_shell_with_a_strict_csp(client: httpx.AsyncClient) -> None:
    for path in ("/ui", "/ui/", "/ui/new", "/ui/compare", "/ui/tasks/0123abcd"):
        response = await client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/html")
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert response.headers["x-frame-options"] == "DENY"  # older browsers (issue 27)
        assert '<script type="module" src="/ui/static/app.js">' in response.text
    assert (await client.get("/ui/tasks/a/b")).status_code == 404


async def test_every_module_the_pages_import_is_served(client: httpx.AsyncClient) -> None:
    """No CDN and no build step: each import in each module resolves to a shipped file."""
    seen: set[str] = set()
    todo = ["app.js"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        response = await client.get(f"/ui/static/{name}")
        assert response.status_code == 200, name
        assert "javascript" in response.headers["content-type"]
        for imported in re.findall(r'from "\./([\w-]+\.js)"', response.text):
            todo.append(imported)
        assert "http://" not in response.text and "https://" not in response.text, name
    assert seen == {p.name for p in STATIC_DIR.glob("*.js")}
    css = await client.get("/ui/static/style.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


async def test_the_pages_are_public_but_the_data_needs_a_key(
    client: httpx.AsyncClient, app: FastAPI,
) -> None:
    """The pages hold no data, so they are public; the data behind them is not."""
    await new_key(app, "ui")
    assert (await client.get("/ui")).status_code == 200
    assert (await client.get("/tasks")).status_code == 401


@pytest.mark.slow
def test_the_built_wheel_ships_the_pages(tmp_path: Path) -> None:
    """Installed from a wheel (not the source tree), the UI is there: package data."""
    root = Path(__file__).resolve().parents[2]
    source = tmp_path / "src"  # a copy: building in the checkout would leave build/ behind
    shutil.copytree(root, source, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__", "tests", "docs", "examples"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(tmp_path), str(source)], check=True,
                   capture_output=True, timeout=600)
    (wheel,) = tmp_path.glob("adapt-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"api/ui/static/{p.name}" for p in STATIC_DIR.iterdir()}
    assert shipped <= names, shipped - names
    assert "api/ui/static/index.html" in names
