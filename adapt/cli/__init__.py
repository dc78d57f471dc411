"""The ``adapt`` command: one module per verb group, put together here.

- :mod:`adapt.cli.local`: ``run``, ``envs``, ``sim-server`` (no server, no database)
- :mod:`adapt.cli.service`: ``serve``, ``worker``
- :mod:`adapt.cli.db`, :mod:`adapt.cli.keys`, :mod:`adapt.cli.tasks`, :mod:`adapt.cli.data`,
  :mod:`adapt.cli.bench`, :mod:`adapt.cli.llm`, :mod:`adapt.cli.docs`, :mod:`adapt.cli.export`,
  :mod:`adapt.cli.env`: the ``adapt db|keys|tasks|data|bench|llm|docs|export|env ...`` groups
- :mod:`adapt.cli.support`: error output and the one logging set-up every command uses
- what the verbs use: :mod:`adapt.cli.standalone` (``adapt run``'s task in this process, no
  server and no database), :mod:`adapt.cli.liveview` (its live tree in the terminal),
  :mod:`adapt.cli.docs_config` (the configuration page ``adapt docs configuration`` writes)
"""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import ValidationError

from adapt.cli import (
    bench,
    data,
    db,
    docs,
    docs_config,
    env,
    export,
    keys,
    llm,
    local,
    service,
    tasks,
)
from adapt.settings import Settings

app = typer.Typer(
    name="adapt",
    help="ADaPT: as-needed decomposition and planning for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)



def _version(show: bool) -> None:
    if show:
        from adapt.version import __version__

        typer.echo(f"adapt {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="Print the installed version and exit.")] = False,
) -> None:
    """ADaPT: as-needed decomposition and planning for LLM agents."""


app.command()(local.run)
app.command()(local.envs)
app.command("sim-server")(local.sim_server)
app.add_typer(db.app, name="db")
app.add_typer(keys.app, name="keys")
app.add_typer(tasks.app, name="tasks")
app.add_typer(data.app, name="data")
app.command()(service.serve)
app.command()(service.worker)
app.add_typer(bench.app, name="bench")
import adapt.cli.mcpmark  # noqa: E402, F401  (adds `adapt bench mcpmark` to bench.app)

app.add_typer(llm.app, name="llm")
app.add_typer(docs.app, name="docs")
app.add_typer(export.app, name="export")
app.add_typer(env.app, name="env")


def main() -> None:
    try:
        app()
    except ValidationError as exc:
        if exc.title != Settings.__name__:
            raise
        # a bad ADAPT_* variable: say which and why, not a stack trace
        for error in exc.errors():
            where = str(error["loc"][0]) if error["loc"] else ""
            info = Settings.model_fields.get(where)
            name = docs_config.env_names(where, info, "ADAPT_")[0] if info else where
            typer.echo(f"adapt: invalid setting {name}={error.get('input')!r}: "
                       f"{error['msg']}", err=True)
        typer.echo("adapt: see docs/configuration.md for every setting", err=True)
        raise SystemExit(2) from None


__all__ = ["app", "main"]
