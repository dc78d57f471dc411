"""``adapt run``, ``adapt envs`` and ``adapt sim-server``: local runs, no server or database."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from adapt.cli.run_options import ActOnly, CascadeMode, Grammar, Verification, run_options
from adapt.cli.support import err, fail, setup_logging, validation_message
from adapt.errors import (
    EnvironmentUnavailable,
    InvalidConfig,
    RemoteEnvironmentError,
    UserError,
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


def _check_cascade(specs: list[str]) -> None:
    if len(specs) < 2 or not all(specs) or len(set(specs)) != len(specs):
        raise InvalidConfig(f"--cascade: give two or more different model specs separated by "
                            f"commas, weakest first (got {','.join(specs)!r})")


def run(
    goal: Annotated[str | None, typer.Argument(help="Goal; default: the environment's.")] = None,
    env: Annotated[str, typer.Option("--env", help="Environment name (see `adapt envs`).")] = (
        "textcraft"
    ),
    config: Annotated[str | None, typer.Option(
        "--config", help='Environment config as JSON, e.g. \'{"seed": 5}\'.')] = None,
    strategy: Annotated[str, typer.Option(help="adapt | react | ...")] = "adapt",
    d_max: Annotated[int | None, typer.Option(
        "--d-max", help="Maximum decomposition depth (RunConfig.d_max; 1..8). Default 3; "
        "under --profile paper the paper's for the environment (TextCraft 4).")] = None,
    model: Annotated[str | None, typer.Option(
        help="Model spec for both roles, e.g. openai:gpt-4o-mini, "
        "'sim:textcraft?capability=1'.")] = None,
    executor_model: Annotated[str | None, typer.Option("--executor-model")] = None,
    planner_model: Annotated[str | None, typer.Option("--planner-model")] = None,
    executor: Annotated[str, typer.Option(
        "--executor", help="Executor design: react | stateact | stateflow | spec | tools (the "
        "environment's actions as function tools of a chat model).")] = "react",
    spec: Annotated[str | None, typer.Option(
        "--spec", help="For --executor spec: a built-in agent (react, rewoo, reflexion, cot, "
        "direct, pass) or a spec file (s-expression or YAML).")] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1,
                                                  help="Executor LLM calls per run.")] = None,
    planner_output: Annotated[str | None, typer.Option(
        "--planner-output", help="text (Step N: lines, default) | json (the plan as "
        "structured output where the endpoint takes a JSON schema).")] = None,
    monitor: Annotated[bool | None, typer.Option(
        "--monitor/--no-monitor",
        help="The decoding monitor on the executor's and planner's output (default: on; off "
        "under --profile paper).")] = None,
    profile: Annotated[str, typer.Option(
        "--profile", help="default | paper (the published protocols: prompts, step and token "
        "limits, no decoding monitor; options given here win).")] = "default",
    verification: Verification = None,
    grammar: Grammar = False,
    act_only: ActOnly = False,
    cascade: Annotated[str | None, typer.Option(
        "--cascade", help="A model cascade (executor.models): comma-separated executor model "
        "specs, weakest first; a failed node is retried with the next (the planner: "
        "--planner-model, else --model, else the first).")] = None,
    cascade_mode: CascadeMode = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole tree as JSON.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run one task locally (no server, no database) and show the tree as it grows."""
    from adapt.cli.liveview import LiveTreeSink, render_summary
    from adapt.cli.standalone import (
        build_models,
        model_specs,
        parse_config_json,
        resolve_local,
        run_local,
    )
    from adapt.engine import MemorySink, RunConfig
    from adapt.llm.openai_compat.pool import closing_default_pool
    from adapt.service.remote_envs import register as register_remote
    from adapt.settings import get_settings

    setup_logging(verbose)
    try:
        settings = get_settings()
        register_remote(settings)  # ADAPT_REMOTE_ENVIRONMENTS: a remote --env too
        env_config = parse_config_json(config)
        chain = None if cascade is None else [s.strip() for s in cascade.split(",")]
        if chain is not None:
            if executor_model:
                raise InvalidConfig("give --cascade or --executor-model, not both (the "
                                    "cascade's first model is the executor)")
            _check_cascade(chain)
        options = run_options(verification=verification, grammar=grammar, act_only=act_only,
                              cascade_mode=cascade_mode)
        run_config = RunConfig.model_validate({
            "strategy": strategy, "profile": profile, **options,
            **({"d_max": d_max} if d_max is not None else {}),
            "executor": {"kind": executor, **options.get("executor", {}),
                         **({"max_steps": max_steps} if max_steps is not None else {}),
                         **({"spec": _read_spec(spec)} if spec else {})},
            "monitor": {} if monitor is None else {"enabled": monitor},
            **({"planner": {"output": planner_output}} if planner_output else {})})
        specs, notice = model_specs(settings, model=model, executor_model=executor_model,
                                    planner_model=planner_model, cascade=chain)
        env_config = _goal_into_config(env, env_config, goal)
        # resolved once: the profile's settings for this environment, the models
        resolved, env_config = resolve_local(env, env_config, run_config, specs)
        models, chained = build_models(settings, specs, notice, environment=env)
        executors = chained if specs.cascade else None
    except ValidationError as exc:
        fail(validation_message(exc))
    except UserError as exc:
        fail(str(exc))
    if models.notice:
        err.print(f"[yellow]note:[/] {models.notice}")

    out = Console()
    title = f"{env} · {strategy} · d_max {resolved.d_max} · profile {profile}"
    try:
        if as_json:
            sink = MemorySink()
            result = asyncio.run(closing_default_pool(run_local(
                env, env_config, resolved, models, goal=goal, sink=sink, cascade=executors)))
            payload = sink.tree(with_steps=True, with_calls=True)
            payload["models"] = models.describe()
            payload["environment"] = {"name": env, "config": env_config}
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        else:
            with LiveTreeSink(out, title) as live:
                result = asyncio.run(closing_default_pool(run_local(
                    env, env_config, resolved, models, goal=goal, sink=live,
                    cascade=executors)))
            out.print()
            out.rule("result", style="dim")
            names = models.names()
            if executors:
                names["executor"] = " > ".join(
                    m.name + (" (SIMULATED)" if m.simulated else "") for m in executors)
            out.print(render_summary(result, names))
    except (UserError, EnvironmentUnavailable, RemoteEnvironmentError) as exc:
        if not as_json:
            out.print()  # end the live view's last line before the error
        fail(str(exc))
    raise typer.Exit(0 if result.status == "succeeded" else 1)


def envs() -> None:
    """List the registered environments (the remote ones of ADAPT_REMOTE_ENVIRONMENTS too)."""
    from adapt.envs import registry
    from adapt.service.remote_envs import register
    from adapt.settings import get_settings

    try:
        register(get_settings())
    except UserError as exc:
        fail(str(exc))
    out = Console()
    for info in registry.describe():
        out.print(f"[bold]{info.name}[/]  {info.description}")
        out.print(f"  config schema: {json.dumps(info.config_schema.get('properties', {}))}",
                  style="dim")


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
