"""Helpers shared by the command modules: error output and logging set-up."""

from __future__ import annotations

import logging
import sys
from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``message`` as an error (literally: square brackets survive) and exit."""
    err.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(code)


def validation_message(exc: ValidationError) -> str:
    from adapt.envs.registry import format_validation_errors

    return "invalid option: " + format_validation_errors(exc)


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
