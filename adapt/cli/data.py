"""``adapt data``: load data sets into their servers, prepare sandboxes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from adapt.cli.support import err, fail, setup_logging
from adapt.errors import UserError

app = typer.Typer(help="Load data sets into their servers.", no_args_is_help=True)


@app.command("load-sql")
def data_load_sql(
    path: Annotated[Path, typer.Argument(
        help="The InterCode-SQL data directory or its ic_spider_dbs.sql dump.")],
    if_missing: Annotated[bool, typer.Option(
        "--if-missing", help="Only load when a database or table is missing.")] = False,
) -> None:
    """Load the Spider databases into MariaDB and create the read-only agent user
    (ADAPT_SQL_* settings: host, port, admin and agent credentials)."""
    from adapt.envs.intercode_sql.loader import load_sql
    from adapt.envs.intercode_sql.settings import SQLSettings

    setup_logging(False)
    s = SQLSettings()
    try:
        report = load_sql(path, host=s.host, port=s.port, admin_user=s.admin_user,
                          admin_password=s.admin_password, agent_user=s.agent_user,
                          agent_password=s.agent_password, reload=not if_missing)
    except UserError as exc:
        fail(str(exc))
    err.print(escape(report.summary()))  # warnings, if any, were logged above


@app.command("prepare-bash")
def data_prepare_bash(
    path: Annotated[Path | None, typer.Argument(
        help="The InterCode-Bash data directory (setup_nl2b_fs_*.sh); default: "
        "ADAPT_BASH_DATA_DIR.")] = None,
    fs: Annotated[list[int] | None, typer.Option(
        "--fs", help="Only this file system (1-4; repeatable). Default: all four.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when ready.")] = False,
) -> None:
    """Prepare the sandbox file systems of InterCode-Bash (idempotent; ADAPT_BASH_CACHE_DIR,
    default ~/.cache/adapt/intercode-bash). Environments prepare what is missing by themselves."""
    from adapt.envs.intercode_bash.layers import FILE_SYSTEMS, default_cache_dir, prepare
    from adapt.envs.intercode_bash.settings import BashSettings

    setup_logging(False)
    s = BashSettings()
    data = path or s.data_dir
    if data is None:
        fail("give the InterCode-Bash data directory (or set ADAPT_BASH_DATA_DIR)")
    cache = s.cache_dir or default_cache_dir()
    try:
        layers = prepare(data, cache, file_systems=fs or FILE_SYSTEMS, force=force,
                         progress=lambda msg: err.print(f"intercode_bash: {escape(msg)}"))
    except UserError as exc:
        fail(str(exc))
    for number, layer in sorted(layers.items()):
        err.print(f"file system {number}: {len(layer.manifest.entries)} tracked files "
                  f"in {escape(str(layer.fs_layer))}")
