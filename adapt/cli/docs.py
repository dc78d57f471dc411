"""``adapt docs``: documentation pages generated from the code."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from adapt.cli.support import err

app = typer.Typer(help="Documentation pages generated from the code.", no_args_is_help=True)


@app.command("configuration")
def docs_configuration(
    out: Annotated[Path, typer.Option("--out", help="The page to write or check.")] = Path(
        "docs/configuration.md"),
    check: Annotated[bool, typer.Option(
        "--check", help="Write nothing; exit 1 when the page differs from the settings.")] = False,
) -> None:
    """Write docs/configuration.md from the Settings model and the environments' settings."""
    from adapt.cli import docs_config

    if check:
        if not docs_config.is_current(out):
            err.print(f"{out} is stale: run `adapt docs configuration` to regenerate it")
            raise typer.Exit(1)
        typer.echo(f"{out} is current")
        return
    changed = docs_config.write(out)
    typer.echo(f"{'wrote' if changed else 'unchanged:'} {out}")
