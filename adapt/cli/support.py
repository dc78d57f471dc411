"""What every command module shares: error output, the one logging set-up (from
:mod:`adapt.logsetup`, which the benchmarks share), a database session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from adapt.logsetup import setup_logging

__all__ = ["err", "fail", "safe_url", "setup_logging", "validation_message", "with_session"]

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

T = TypeVar("T")

err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``message`` as an error (literally: square brackets survive) and exit."""
    err.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(code)


def validation_message(exc: ValidationError) -> str:
    from adapt.envs.registry import format_validation_errors

    return "invalid option: " + format_validation_errors(exc)


def safe_url(url: str) -> str:
    """A database URL with its password hidden."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


async def with_session(fn: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run ``fn`` in one transaction on the configured database."""
    from adapt.settings import get_settings
    from adapt.store.db import create_engine, session_factory

    engine = create_engine(get_settings().database_url)
    try:
        async with session_factory(engine).begin() as session:
            return await fn(session)
    finally:
        await engine.dispose()
