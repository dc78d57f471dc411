"""``adapt env serve`` and ``adapt env openapi``, and ``adapt envs`` with the operator's remote
environments."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from adapt.cli import app

ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


def test_env_serve_refuses_a_public_bind_without_a_token_and_an_unknown_name() -> None:
    public = runner.invoke(app, ["env", "serve", "textcraft", "--host", "0.0.0.0"],
                           env={"ADAPT_ENV_SERVE_TOKEN": ""})
    assert public.exit_code == 2 and "ADAPT_ENV_SERVE_TOKEN" in public.output
    unknown = runner.invoke(app, ["env", "serve", "textcraf"])
    assert unknown.exit_code == 2 and "unknown environment 'textcraf'" in unknown.output


def test_env_openapi_checks_the_committed_document(tmp_path: Path) -> None:
    committed = ROOT / "docs" / "remote-environments.openapi.json"
    ok = runner.invoke(app, ["env", "openapi", "--output", str(committed), "--check"])
    assert ok.exit_code == 0, ok.output
    stale = tmp_path / "old.json"
    stale.write_text("{}\n")
    assert runner.invoke(app, ["env", "openapi", "--output", str(stale), "--check"]).exit_code == 1
    printed = runner.invoke(app, ["env", "openapi"])
    assert json.loads(printed.stdout)["info"]["title"] == "adapt environment protocol"


def test_envs_lists_remote_environments_and_refuses_a_refused_url(textcraft_url: str) -> None:
    registered = json.dumps({"crafts": {"url": textcraft_url}})
    listed = runner.invoke(app, ["envs"], env={
        "ADAPT_REMOTE_ENVIRONMENTS": registered,
        "ADAPT_REMOTE_ENVIRONMENT_ALLOWED_NETWORKS": '["127.0.0.1/32"]'})
    assert listed.exit_code == 0 and "crafts" in listed.output, listed.output
    refused = runner.invoke(app, ["envs"], env={"ADAPT_REMOTE_ENVIRONMENTS": registered,
                                                "ADAPT_REMOTE_ENVIRONMENT_ALLOWED_NETWORKS": "[]"})
    assert refused.exit_code == 2 and "ADAPT_REMOTE_ENVIRONMENT_ALLOWED_NETWORKS" in refused.output
