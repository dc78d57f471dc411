"""The ``adapt`` command."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from adapt.cli_support import err, fail, setup_logging, validation_message
from adapt.errors import UserError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

T = TypeVar("T")

app = typer.Typer(
    name="adapt",
    help="ADaPT: as-needed decomposition and planning for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
def _read_spec(value: str) -> str:
    """``--spec``: a built-in agent's name, or the path of a spec file (its text)."""
    path = Path(value)
    if path.suffix in (".lisp", ".sexp", ".yaml", ".yml") or path.is_file():
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read the spec file {value!r}: {exc.strerror}") from None
    return value


def _goal_into_config(env: str, env_config: dict[str, Any], goal: str | None) -> dict[str, Any]:
    """``adapt run "craft beehive"``: an environment that can build a game from a goal (a
    ``goal`` config field) gets it there when the config names no game itself."""
    from adapt.envs import registry

    if not goal or env_config.get("goal") or "seed" in env_config:
        return env_config
    try:
        fields = registry.get(env).config_model.model_fields
    except UserError:
        return env_config  # run_local reports the unknown environment
    return {**env_config, "goal": goal} if "goal" in fields else env_config


@app.command()
def run(
    goal: Annotated[str | None, typer.Argument(help="Goal; default: the environment's.")] = None,
    env: Annotated[str, typer.Option("--env", help="Environment name (see `adapt envs`).")] = (
        "textcraft"
    ),
    config: Annotated[str | None, typer.Option(
        "--config", help='Environment config as JSON, e.g. \'{"seed": 5}\'.')] = None,
    strategy: Annotated[str, typer.Option(help="adapt | react | ...")] = "adapt",
    d_max: Annotated[int, typer.Option("--d-max", min=1, max=8,
                                       help="Maximum decomposition depth.")] = 3,
    model: Annotated[str | None, typer.Option(
        help="Model spec for both roles, e.g. openai:gpt-4o-mini, "
        "'sim:textcraft?capability=1'.")] = None,
    executor_model: Annotated[str | None, typer.Option("--executor-model")] = None,
    planner_model: Annotated[str | None, typer.Option("--planner-model")] = None,
    executor: Annotated[str, typer.Option(
        "--executor", help="Executor design: react | stateact | stateflow | spec.")] = "react",
    spec: Annotated[str | None, typer.Option(
        "--spec", help="For --executor spec: a built-in agent (react, rewoo, reflexion, cot, "
        "direct, pass) or a spec file (s-expression or YAML).")] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1,
                                                  help="Executor LLM calls per run.")] = None,
    monitor: Annotated[bool | None, typer.Option(
        "--monitor/--no-monitor",
        help="The decoding monitor on the executor's and planner's output (default: on; off "
        "under --profile paper).")] = None,
    profile: Annotated[str, typer.Option(
        "--profile", help="default | paper (the published protocols: prompts, step and token "
        "limits, no decoding monitor; options given here win).")] = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole tree as JSON.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run one task locally (no server, no database) and show the tree as it grows."""
    from adapt.engine import MemorySink, RunConfig
    from adapt.liveview import LiveTreeSink, render_summary
    from adapt.settings import get_settings
    from adapt.standalone import load_models, parse_config_json, run_local

    setup_logging(verbose)
    try:
        settings = get_settings()
        env_config = parse_config_json(config)
        run_config = RunConfig.model_validate({
            "strategy": strategy, "d_max": d_max, "profile": profile,
            "executor": {"kind": executor,
                         **({"max_steps": max_steps} if max_steps is not None else {}),
                         **({"spec": _read_spec(spec)} if spec else {})},
            "monitor": {} if monitor is None else {"enabled": monitor}})
        models = load_models(settings, model=model, executor_model=executor_model,
                             planner_model=planner_model)
    except ValidationError as exc:
        fail(validation_message(exc))
    except UserError as exc:
        fail(str(exc))
    if models.notice:
        err.print(f"[yellow]note:[/] {models.notice}")

    env_config = _goal_into_config(env, env_config, goal)
    out = Console()
    title = f"{env} · {strategy} · d_max {d_max} · profile {profile}"
    try:
        if as_json:
            sink = MemorySink()
            result = asyncio.run(run_local(env, env_config, run_config, models, goal=goal,
                                           sink=sink))
            payload = sink.tree(with_steps=True, with_calls=True)
            payload["models"] = models.describe()
            payload["environment"] = {"name": env, "config": env_config}
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        else:
            with LiveTreeSink(out, title) as live:
                result = asyncio.run(run_local(env, env_config, run_config, models, goal=goal,
                                               sink=live))
            out.print()
            out.rule("result", style="dim")
            out.print(render_summary(result, models.names()))
    except UserError as exc:
        if not as_json:
            out.print()  # end the live view's last line before the error
        fail(str(exc))
    raise typer.Exit(0 if result.status == "succeeded" else 1)


@app.command()
def envs() -> None:
    """List the registered environments."""
    from adapt.envs import registry

    out = Console()
    for info in registry.describe():
        out.print(f"[bold]{info.name}[/]  {info.description}")
        out.print(f"  config schema: {json.dumps(info.config_schema.get('properties', {}))}",
                  style="dim")


@app.command("sim-server")
def sim_server(
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8001,
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    latency: Annotated[float, typer.Option(min=0.0, help="Seconds added to every request.")] = 0.0,
    error_rate: Annotated[float, typer.Option("--error-rate", min=0.0, max=1.0,
                                              help="Share of requests answered 429/500.")] = 0.0,
    seed: Annotated[int, typer.Option()] = 0,
) -> None:
    """Serve the simulated models over an OpenAI-compatible HTTP API."""
    from adapt.sim.server import serve

    setup_logging(False)
    err.print(f"[yellow]SIMULATED[/] models on http://{host}:{port}/v1 "
              f"(latency {latency:g}s, error rate {error_rate:g})")
    serve(host=host, port=port, latency=latency, error_rate=error_rate, seed=seed)


db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)
keys_app = typer.Typer(help="API keys (stored hashed; a tenant sees only its own tasks).",
                       no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(keys_app, name="keys")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply pending migrations to ADAPT_DATABASE_URL (default: the embedded SQLite file)."""
    from adapt.settings import get_settings
    from adapt.store.migrate import pending, upgrade

    setup_logging(False)
    settings = get_settings()
    try:
        todo = pending(settings.database_url)
        upgrade(settings.database_url)
    except UserError as exc:
        fail(str(exc))
    except Exception as exc:  # unreachable database, bad credentials, ...
        fail(f"could not migrate {_safe_url(settings.database_url)}: {exc}")
    err.print(f"database {_safe_url(settings.database_url)}: "
              + (f"applied {', '.join(reversed(todo))}" if todo else "already up to date"))


@db_app.command("status")
def db_status() -> None:
    """Show pending migrations (exit 1 when some are pending)."""
    from adapt.settings import get_settings
    from adapt.store.migrate import pending

    settings = get_settings()
    try:
        todo = pending(settings.database_url)
    except Exception as exc:
        fail(f"could not read {_safe_url(settings.database_url)}: {exc}")
    err.print("pending: " + (", ".join(reversed(todo)) if todo else "none"))
    raise typer.Exit(1 if todo else 0)


def _safe_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


async def _with_session(fn: Callable[[AsyncSession], Awaitable[T]]) -> T:
    from adapt.settings import get_settings
    from adapt.store.db import create_engine, session_factory

    engine = create_engine(get_settings().database_url)
    try:
        async with session_factory(engine).begin() as session:
            return await fn(session)
    finally:
        await engine.dispose()


data_app = typer.Typer(help="Load data sets into their servers.", no_args_is_help=True)
app.add_typer(data_app, name="data")


@data_app.command("load-sql")
def data_load_sql(
    path: Annotated[Path, typer.Argument(
        help="The InterCode-SQL data directory or its ic_spider_dbs.sql dump.")],
    if_missing: Annotated[bool, typer.Option(
        "--if-missing", help="Only load when a database or table is missing.")] = False,
) -> None:
    """Load the Spider databases into MariaDB and create the read-only agent user
    (ADAPT_SQL_* settings: host, port, admin and agent credentials)."""
    from adapt.envs.intercode_sql.loader import load_sql
    from adapt.settings import get_settings

    setup_logging(False)
    s = get_settings()
    try:
        report = load_sql(path, host=s.sql_host, port=s.sql_port, admin_user=s.sql_admin_user,
                          admin_password=s.sql_admin_password, agent_user=s.sql_agent_user,
                          agent_password=s.sql_agent_password, reload=not if_missing)
    except UserError as exc:
        fail(str(exc))
    err.print(escape(report.summary()))  # warnings, if any, were logged above


@data_app.command("prepare-bash")
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


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option(help="Tenant the key belongs to.")],
    name: Annotated[str | None, typer.Option(help="A label for the key.")] = None,
) -> None:
    """Create an API key; it is printed once. Once any key exists, the API requires one."""
    from adapt.service.auth import create_key

    if not tenant.strip():
        fail("--tenant must not be empty")
    try:
        key = asyncio.run(_with_session(lambda s: create_key(s, tenant, name)))
    except UserError as exc:
        fail(str(exc))
    except Exception as exc:
        fail(f"could not create the key (is the database migrated? `adapt db upgrade`): {exc}")
    err.print(f"created an API key for tenant [bold]{escape(tenant)}[/]; it is shown only once:")
    sys.stdout.write(f"{key}\n")


LAST_KEY_WARNING = (
    "it is the last active key: once it is revoked EVERY request gets 401 (authentication "
    "never switches itself off) until you create a key (`adapt keys create --tenant NAME`) or "
    "switch authentication off explicitly with ADAPT_AUTH_MODE=off (loopback only)"
)


@keys_app.command("revoke")
def keys_revoke(
    prefix: Annotated[str, typer.Argument(help="The key's 8-character prefix.")],
    force: Annotated[bool, typer.Option(
        "--force", help="Revoke even the last active key (every request then gets 401).")]
    = False,
) -> None:
    """Revoke an API key by its prefix (the last active key only with --force)."""
    from adapt.service.auth import active_keys, revoke_key

    async def revoke(session: AsyncSession) -> tuple[bool, int]:
        left = await active_keys(session)
        if left <= 1 and not force:
            return False, left
        return await revoke_key(session, prefix), left

    try:
        found, left = asyncio.run(_with_session(revoke))
    except Exception as exc:
        fail(f"could not revoke the key: {exc}")
    if left <= 1 and not force:
        fail(f"refusing to revoke {prefix!r}: {LAST_KEY_WARNING}. Pass --force to revoke it "
             "anyway", code=1)
    if not found:
        fail(f"no active key with prefix {prefix!r}", code=1)
    err.print(f"revoked key {escape(prefix)}")
    if left <= 1:
        err.print(f"[yellow]warning:[/] {escape(LAST_KEY_WARNING)}")


@keys_app.command("list")
def keys_list(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's keys.")] = None,
) -> None:
    """List API keys: prefix, tenant, name, created, last used, revoked (never the secret)."""
    from adapt.service.auth import list_keys

    try:
        keys = asyncio.run(_with_session(lambda s: list_keys(s, tenant)))
    except Exception as exc:
        fail(f"could not list the keys (is the database migrated? `adapt db upgrade`): {exc}")

    def when(value: object) -> str:
        return value.isoformat(timespec="seconds") if hasattr(value, "isoformat") else "-"

    out = Console()
    out.print("prefix    tenant            name              created                    "
              "last used                  revoked", style="bold", highlight=False)
    for k in keys:
        state = f"revoked {when(k.revoked_at)}" if k.revoked_at else "active"
        out.print(f"{k.prefix:<9} {escape(k.tenant):<17} {escape(k.name or '-'):<17} "
                  f"{when(k.created_at):<26} {when(k.last_used_at):<26} {state}",
                  highlight=False, soft_wrap=True)
    if not keys:
        err.print("no keys: the API runs open until the first one is created")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (ADAPT_HOST).")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port (ADAPT_PORT).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run the HTTP API. With no broker configured, tasks run in-process (embedded mode)."""
    from adapt.settings import get_settings
    from api.serve import serve as run_server

    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    try:
        run_server(get_settings(), host=host, port=port)
    except UserError as exc:
        fail(str(exc))


@app.command()
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


from adapt.bench.cli import bench_app  # noqa: E402 (the `adapt bench` commands)

app.add_typer(bench_app, name="bench")

from adapt.cli_llm import llm_app  # noqa: E402 (the `adapt llm` commands)

app.add_typer(llm_app, name="llm")


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
