"""docker-compose.yml: the expected services, each running a valid `adapt` command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from adapt.cli import app
from adapt.errors import UserError
from adapt.settings import Settings
from api.serve import check_exposure

ROOT = Path(__file__).resolve().parents[1]


def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_and_dependencies() -> None:
    services = compose()["services"]
    assert {"postgres", "redis", "migrate", "api", "worker"} <= set(services)
    assert services["api"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully")
    assert services["worker"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully")
    for name in ("migrate", "api", "worker"):
        env = services[name]["environment"]
        assert env["ADAPT_DATABASE_URL"].startswith("postgresql://")
        assert env["ADAPT_BROKER_URL"].startswith("redis://")


def test_long_running_services_restart_and_workers_drain_before_the_kill() -> None:
    services = compose()["services"]
    for name in ("postgres", "redis", "api", "worker"):
        assert services[name]["restart"] in ("unless-stopped", "always", "on-failure"), name
    assert "restart" not in services["migrate"]  # a one-shot job
    grace = services["worker"]["stop_grace_period"]
    assert grace.endswith("s")
    assert float(grace[:-1]) > float(services["worker"]["environment"]["ADAPT_DRAIN_SECONDS"])


def test_every_service_command_is_a_valid_adapt_command() -> None:
    runner = CliRunner()
    for name in ("migrate", "api", "worker"):
        command = compose()["services"][name]["command"]
        assert command[0] == "adapt", name
        # the command line parses (options and values are valid); --help stops before running
        result = runner.invoke(app, [*command[1:], "--help"])
        assert result.exit_code == 0, f"{name}: {command}: {result.output}"
        # and a wrong option would have been caught
        bad = runner.invoke(app, [*command[1:], "--no-such-option"])
        assert bad.exit_code != 0


def test_documented_env_vars_exist_in_settings() -> None:
    names = set()
    for field, info in Settings.model_fields.items():
        alias = info.validation_alias
        choices = getattr(alias, "choices", None)
        names |= {str(c).upper() for c in choices} if choices else {f"ADAPT_{field.upper()}"}
    for service in compose()["services"].values():
        for var in (service.get("environment") or {}):
            if var.startswith("ADAPT_"):
                assert var in names, var


def _as_shipped(value: object) -> str:
    """What docker compose makes of ``${NAME:-default}`` when NAME is not set."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value))


def test_the_api_is_published_on_loopback_only_and_never_open_beyond_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27: as shipped, the API's port is published on 127.0.0.1 only; nothing lets
    `adapt serve` run open on a public address; published on every interface without a key,
    it refuses to start."""
    services = compose()["services"]
    for name, service in services.items():
        env = {k: _as_shipped(v) for k, v in (service.get("environment") or {}).items()}
        assert "ADAPT_ALLOW_PUBLIC_WITHOUT_KEYS" not in env, name
        assert env.get("ADAPT_AUTH_MODE", "auto") != "off", name
        if name != "api":
            assert not service.get("ports"), f"{name} publishes a port"
    api = services["api"]
    published = [_as_shipped(port).rsplit(":", 2) for port in api["ports"]]
    assert published == [["127.0.0.1", "8000", "8000"]]
    assert all("${ADAPT_PUBLISHED_HOST:-" in port for port in api["ports"])  # one variable

    env = {k: _as_shipped(v) for k, v in api["environment"].items()}
    assert env["ADAPT_PUBLISHED_HOST"] == "127.0.0.1"
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    bind = api["command"][api["command"].index("--host") + 1]
    check_exposure(Settings(), bind, has_keys=False)  # open on this machine, as adapt serve
    monkeypatch.setenv("ADAPT_PUBLISHED_HOST", "0.0.0.0")
    with pytest.raises(UserError, match="adapt keys create"):
        check_exposure(Settings(), bind, has_keys=False)
    check_exposure(Settings(), bind, has_keys=True)
    monkeypatch.setenv("ADAPT_ALLOWED_HOSTS", '["adapt.example.com"]')
    assert Settings().allowed_hosts == ["adapt.example.com"]
