"""``adapt export otlp``: finished tasks' traces, from the database, to the configured OTLP
endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``), so old runs can be examined in a new backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.markup import escape

from adapt.cli.support import err, fail

app = typer.Typer(help="Send stored tasks elsewhere.", no_args_is_help=True)


def _since(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        fail(f"--since {value!r}: not a date (YYYY-MM-DD or an ISO 8601 time)")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@app.command("otlp")
def export_otlp(
    task_id: Annotated[str | None, typer.Argument(help="The task to send.")] = None,
    since: Annotated[str | None, typer.Option(
        help="Send every task that finished since then (YYYY-MM-DD or ISO 8601; UTC unless "
        "it says otherwise).")] = None,
    content: Annotated[bool | None, typer.Option(
        "--content/--no-content", help="Also send prompts, completions, actions and "
        "observations (default: ADAPT_OTEL_CAPTURE_CONTENT).")] = None,
) -> None:
    """Send finished tasks' traces to the OTLP endpoint the environment configures
    (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME)."""
    from adapt.settings import get_settings
    from adapt.telemetry import configured

    if (task_id is None) == (since is None):
        fail("name one task (TASK_ID) or --since DATE")
    if not configured():
        fail("no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://127.0.0.1:6006 "
             "for Phoenix)")
    try:
        from adapt.telemetry.otlp import Pipeline, otlp_exporter

        exporter = otlp_exporter()
    except ModuleNotFoundError as exc:  # only a missing OpenTelemetry package means no extra
        if not (exc.name or "").startswith("opentelemetry"):
            raise
        fail("trace export needs the 'otel' extra: pip install 'adapt[otel]'")
    settings = get_settings()
    capture = settings.otel_capture_content if content is None else content
    moment = _since(since) if since is not None else None
    # a full queue is waited for here (Pipeline.send), never dropped: every span is sent
    pipeline = Pipeline(exporter, max_queue_size=settings.otel_max_queue_size)

    async def run() -> tuple[int, int, list[str]]:
        from adapt.store import traces
        from adapt.store.db import create_engine, session_factory
        from adapt.telemetry.history import export_tasks

        engine = create_engine(settings.database_url)
        try:
            sessions = session_factory(engine)
            ids = [task_id] if task_id is not None else await traces.finished_since(
                sessions, moment or datetime.now(UTC))
            return await export_tasks(sessions, ids, pipeline.send, content=capture)
        finally:
            await engine.dispose()

    try:
        tasks, spans, skipped = asyncio.run(run())
    except Exception as exc:
        fail(f"could not read the tasks (is the database migrated? `adapt db upgrade`): {exc}")
    pipeline.flush(60.0)
    pipeline.shutdown()
    for missing in skipped:
        err.print(f"[yellow]skipped[/] {escape(missing)}: no such task, or not finished")
    if task_id is not None and skipped:
        raise typer.Exit(1)
    dropped = pipeline.dropped
    err.print(f"sent {spans - dropped} span(s) of {tasks} task(s)"
              + (f"; [red]{dropped} could not be sent[/]" if dropped else ""))
    if dropped:
        raise typer.Exit(1)
