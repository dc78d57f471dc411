"""The README opens with the two set-up commands, and CI runs the second one verbatim."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    start = lines.index("```bash")
    assert all(not ln.strip() for ln in lines[1:start]), "README must open with the commands"
    end = lines.index("```", start + 1)
    return lines[start + 1 : end]


def test_readme_opens_with_exactly_two_commands() -> None:
    commands = readme_commands()
    assert len(commands) == 2
    assert "adapt" in commands[0] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    assert readme_commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_every_setting_is_documented() -> None:
    from adapt.settings import Settings

    text = (ROOT / "README.md").read_text()
    for name, info in Settings.model_fields.items():
        choices = getattr(info.validation_alias, "choices", None)
        env = str(choices[0]) if choices else f"ADAPT_{name.upper()}"
        assert f"`{env}`" in text, f"{env} is missing from the README configuration table"
