"""docker-compose.yml: the expected services, each running a valid `adapt` command."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from adapt.cli import app

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
    from adapt.settings import Settings

    names = set()
    for field, info in Settings.model_fields.items():
        alias = info.validation_alias
        choices = getattr(alias, "choices", None)
        names |= {str(c).upper() for c in choices} if choices else {f"ADAPT_{field.upper()}"}
    for service in compose()["services"].values():
        for var in (service.get("environment") or {}):
            if var.startswith("ADAPT_"):
                assert var in names, var
