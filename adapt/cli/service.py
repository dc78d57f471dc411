"""``adapt serve`` and ``adapt worker``: the HTTP API and the Celery worker."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from adapt.cli.support import fail, setup_logging
from adapt.errors import UserError


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (ADAPT_HOST).")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port (ADAPT_PORT).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run the HTTP API. With no broker configured, tasks run in-process (embedded mode)."""
    from adapt.settings import get_settings
    from api.serve import serve as run_server

    setup_logging(verbose, quiet=logging.INFO)  # a server logs its requests and start-up
    try:
        run_server(get_settings(), host=host, port=port)
    except UserError as exc:
        fail(str(exc))


def worker(
    concurrency: Annotated[int | None, typer.Option(
        min=1, help="Tasks run at once by this process (ADAPT_CONCURRENCY, default 200).")] = None,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
) -> None:
    """Run a Celery worker (needs ADAPT_BROKER_URL, e.g. redis://127.0.0.1:6379/0)."""
    from adapt.settings import get_settings

    settings = get_settings()
    if not settings.broker_url:
        fail("no broker configured: set ADAPT_BROKER_URL (e.g. redis://127.0.0.1:6379/0); "
             "without a broker, `adapt serve` runs tasks in-process")
    from workers.celery_app import start_worker

    try:
        code = start_worker(settings, concurrency=concurrency, loglevel=loglevel)
    except UserError as exc:
        fail(str(exc))
    raise typer.Exit(code)
