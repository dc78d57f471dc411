"""One version, pyproject's: the package metadata, ``adapt --version``, ``GET /version`` and the
OpenAPI document say the same."""

from __future__ import annotations

import tomllib
from pathlib import Path

import httpx
from typer.testing import CliRunner

import adapt
from adapt.cli import app as cli
from adapt.store.migrate import code_head
from api.main import create_app
from tests.support.api import FakeDispatcher, make_settings

ROOT = Path(__file__).resolve().parents[1]


def pyproject_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_the_package_says_pyprojects_version() -> None:
    assert adapt.__version__ == pyproject_version()


def test_adapt_version_prints_it() -> None:
    out = CliRunner().invoke(cli, ["--version"])
    assert out.exit_code == 0, out.output
    assert out.output.strip() == f"adapt {pyproject_version()}"


def test_the_newest_migration_is_the_code_head() -> None:
    newest = max(p.name.split("_")[0] for p in (ROOT / "migrations" / "versions").glob("0*.py"))
    assert code_head() == newest


async def test_get_version_and_the_openapi_version(sqlite_url: str) -> None:
    app = create_app(make_settings(sqlite_url), dispatcher=FakeDispatcher())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            got = await c.get("/version")
            doc = (await c.get("/openapi.json")).json()
    assert got.status_code == 200
    assert got.json() == {"version": pyproject_version(), "schema_revision": code_head()}
    assert doc["info"]["version"] == pyproject_version()
    assert "/version" in doc["paths"]
