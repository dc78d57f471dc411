"""docs/configuration.md is generated from the settings models and kept current."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pydantic import AliasChoices, BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from adapt.cli import docs_config
from adapt.envs.intercode_bash.settings import BashSettings
from adapt.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / docs_config.PAGE
ADAPT = str(Path(sys.executable).parent / "adapt")


def adapt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ADAPT, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "200"}, timeout=120)


def test_the_committed_page_is_current() -> None:
    assert docs_config.is_current(PAGE), (
        "docs/configuration.md is stale: run `adapt docs configuration` and commit the page")


def test_every_setting_has_a_description_and_a_row() -> None:
    text = PAGE.read_text()
    for name, info in Settings.model_fields.items():
        assert info.description, f"Settings.{name} has no description (the page shows it)"
        env = docs_config.env_names(name, info, "ADAPT_")[0]
        assert f"| `{env}`" in text, f"{env} is missing from docs/configuration.md"


def test_environment_settings_are_on_the_page() -> None:
    text = PAGE.read_text()
    assert ("intercode_bash", BashSettings) in docs_config.environment_settings()
    for name in BashSettings.model_fields:
        assert f"`ADAPT_BASH_{name.upper()}`" in text


def test_the_command_writes_the_page_and_check_fails_when_stale(tmp_path: Path) -> None:
    out = adapt("docs", "configuration", "--check", cwd=tmp_path)
    assert out.returncode == 1 and "stale" in out.stderr, out.stderr  # no page yet

    out = adapt("docs", "configuration", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    page = tmp_path / "docs" / "configuration.md"
    assert page.read_text() == PAGE.read_text()
    assert adapt("docs", "configuration", "--check", cwd=tmp_path).returncode == 0

    page.write_text(page.read_text().replace("Seconds per LLM request.", "Seconds."))
    out = adapt("docs", "configuration", "--check", "--out", str(page), cwd=ROOT)
    assert out.returncode == 1 and "stale" in out.stderr


class _Limits(BaseModel):
    depth: int = Field(default=3, description="How deep.")
    width: int | None = None


class _Core(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="X_")

    token: str | None = Field(default=None, validation_alias=AliasChoices("X_TOKEN", "TOKEN"),
                              description="A token | with a pipe.")
    path: Path = Field(default_factory=lambda: Path.home() / "x", description="Where.")
    password: str = Field(default="", description="Empty by default.")
    on: bool = Field(default=True, description="Switch.")
    limits: _Limits = Field(default_factory=_Limits, description="Limits (JSON).")


class _EnvSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="X_ENV_")

    timeout: float = Field(default=2.5, description="Per command.")


def test_rendering_of_names_defaults_nested_keys_and_environment_sections() -> None:
    text = docs_config.render(_Core, [("toy", _EnvSettings)])
    lines = text.splitlines()
    assert "| `X_TOKEN` / `TOKEN` | unset | A token \\| with a pipe. |" in lines
    assert "| `X_PATH` | `~/x` | Where. |" in lines
    assert "| `X_PASSWORD` | empty | Empty by default. |" in lines
    assert "| `X_ON` | `true` | Switch. |" in lines
    assert '| `X_LIMITS` | `{"depth": 3}` | Limits (JSON). |' in lines
    assert "- `depth`: How deep." in lines and "- `width`" in lines
    assert "### `toy` (`tests.test_docs_config._EnvSettings`)" in lines
    assert "| `X_ENV_TIMEOUT` | `2.5` | Per command. |" in lines
