"""Issue 14, item 2: authentication is explicit and sticky. An API that has had a key never
reopens by itself; `adapt keys revoke` refuses the last key without --force; switching auth off
is a setting that `adapt serve` refuses on a public address; /metrics needs its own token."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapt.errors import UserError
from api.serve import check_exposure
from tests.security.service import service
from tests.support.api import make_settings
from tests.support.databases import postgres_database


def cli(db: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "ADAPT_DATABASE_URL": db, **env}
    return subprocess.run([sys.executable, "-m", "adapt.cli", *args], capture_output=True,
                          text=True, env=full, timeout=120)


def migrated(db: str) -> str:
    from adapt.store.migrate import upgrade

    upgrade(db)
    return db


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        yield migrated(f"sqlite:///{tmp_path / 'adapt.db'}")
    else:
        with postgres_database() as url:
            yield url


def test_revoking_the_last_key_keeps_the_api_closed_until_auth_is_switched_off(db: str) -> None:
    created = cli(db, "keys", "create", "--tenant", "acme")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    prefix = key.split("_")[1]

    refused = cli(db, "keys", "revoke", prefix)
    assert refused.returncode != 0
    assert "last active key" in refused.stderr and "401" in refused.stderr
    assert "--force" in refused.stderr

    listed = cli(db, "keys", "list")
    assert listed.returncode == 0, listed.stderr
    assert prefix in listed.stdout and "acme" in listed.stdout and "active" in listed.stdout

    async def requests(**settings: str) -> tuple[int, int, int]:
        async with service(db, broker_url="redis://127.0.0.1:1/0", **settings) as client:
            anonymous = (await client.get("/tasks")).status_code
            with_key = (await client.get("/tasks", headers={
                "Authorization": f"Bearer {key}"})).status_code
            metrics = (await client.get("/metrics")).status_code
        return anonymous, with_key, metrics

    import asyncio

    assert asyncio.run(requests()) == (401, 200, 401)
    forced = cli(db, "keys", "revoke", prefix, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "401" in forced.stderr
    assert asyncio.run(requests()) == (401, 401, 401)  # never reopens by itself
    listed = cli(db, "keys", "list")
    assert prefix in listed.stdout and "revoked" in listed.stdout
    # the operator's explicit switch (only accepted on loopback by `adapt serve`)
    assert asyncio.run(requests(auth_mode="off")) == (200, 401, 200)


def test_switching_auth_off_is_refused_on_a_public_address() -> None:
    off = make_settings("sqlite:///unused.db", auth_mode="off")
    with pytest.raises(UserError, match="AUTH_MODE=off"):
        check_exposure(off, "0.0.0.0", has_keys=True)
    with pytest.raises(UserError, match="AUTH_MODE=off"):
        check_exposure(off, "192.168.1.5", has_keys=False)
    check_exposure(off, "127.0.0.1", has_keys=True)
    keys = make_settings("sqlite:///unused.db", auth_mode="keys")
    check_exposure(keys, "0.0.0.0", has_keys=False)  # every request will need a key


async def test_auth_mode_keys_needs_a_key_before_any_exists_and_metrics_its_token(
    database_url: str,
) -> None:
    async with service(database_url, broker_url="redis://127.0.0.1:1/0", auth_mode="keys",
                       metrics_token="scrape-me") as client:
        assert (await client.get("/tasks")).status_code == 401
        assert (await client.get("/metrics")).status_code == 401
        wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = await client.get("/metrics", headers={"Authorization": "Bearer scrape-me"})
        assert ok.status_code == 200 and "adapt_tasks" in ok.text
        assert (await client.get("/healthz")).status_code == 200
