"""The `adapt bench` commands (registered on the main CLI in adapt/cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from adapt.cli_support import err, fail, setup_logging, validation_message
from adapt.errors import UserError

if TYPE_CHECKING:
    from adapt.bench.textcraft import BenchModel
    from adapt.engine.runtime import PriceFn

bench_app = typer.Typer(help="Benchmarks: success rates, decomposition depth, calls, cost.",
                        no_args_is_help=True)


def load_bench_models(model: list[str] | None, executor_model: str | None,
                      planner_model: str | None) -> tuple[list[BenchModel], PriceFn]:
    """The models to compare (one per ``--model``; the settings' default without one) and the
    pricing function. Raises ``UserError`` / ``ValidationError`` for bad specs or settings."""
    from adapt.bench.textcraft import BenchModel
    from adapt.llm.base import Usage
    from adapt.llm.pricing import Pricing
    from adapt.settings import get_settings
    from adapt.standalone import load_models

    settings = get_settings()
    pricing = Pricing.from_setting(settings.pricing)
    bench_models: list[BenchModel] = []
    for spec in list(model) if model else [None]:
        loaded = load_models(settings, model=spec, executor_model=executor_model,
                             planner_model=planner_model)
        if loaded.notice:
            err.print(f"[yellow]note:[/] {loaded.notice}")
        bench_models.append(BenchModel(loaded.executor, loaded.planner))

    def price(name: str, usage: Usage, simulated: bool) -> float | None:
        return pricing.cost(name, usage, simulated=simulated)

    return bench_models, price


@bench_app.command("textcraft")
def bench_textcraft(
    split: Annotated[str, typer.Option(help="Task split: dev | test | all.")] = "test",
    depth: Annotated[int | None, typer.Option(min=1, help="Only tasks of this recipe depth.")] = (
        None
    ),
    limit: Annotated[int | None, typer.Option(
        min=1, help="At most N tasks, stratified across recipe depths.")] = None,
    strategies: Annotated[str, typer.Option(
        help="Comma-separated strategy names, e.g. adapt,react,plan_and_execute.")] = (
        "adapt,react"
    ),
    d_max: Annotated[str, typer.Option("--d-max", help="Maximum decomposition depth, or a "
                                       "comma-separated list (e.g. 1,2,3,4).")] = "4",
    model: Annotated[list[str] | None, typer.Option(
        help="Model spec for both roles; repeat to compare models side by side. Default: the "
        "settings' default (the SIMULATED TextCraft model without an API key).")] = None,
    executor_model: Annotated[str | None, typer.Option("--executor-model")] = None,
    planner_model: Annotated[str | None, typer.Option("--planner-model")] = None,
    executors: Annotated[str, typer.Option(
        help="Comma-separated executor designs to compare, e.g. react,stateact.")] = "react",
    concurrency: Annotated[int, typer.Option(min=1, help="Task runs at once.")] = 8,
    seed: Annotated[int, typer.Option(help="RunConfig.seed for every run.")] = 0,
    prompts: Annotated[str, typer.Option(
        help="TextCraft prompt set: default | small (short few-shot prompts for small local "
        "models such as local:smollm2).")] = "default",
    planner_max_tokens: Annotated[int | None, typer.Option(
        "--planner-max-tokens", min=1, help="Completion limit per planner call (default: the "
        "engine's, 512); small local models that run on past their plan need less.")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Write report.json, report.md, tasks.jsonl (and the PNGs) here.")] = None,
    plot: Annotated[bool, typer.Option(help="Write PNG plots into --out (needs matplotlib).")] = (
        False
    ),
    monitor: Annotated[bool | None, typer.Option(
        "--monitor/--no-monitor",
        help="The decoding monitor on the executor's and planner's output (default: on; off "
        "under profile paper).")] = None,
    profile: Annotated[str, typer.Option(
        "--profile", help="Comma-separated profiles to compare side by side: default, paper "
        "(the published protocols; see docs/reproducing-the-papers.md).")] = "default",
    verification: Annotated[str | None, typer.Option(
        "--verification", help="env: the environment checks every node's goal (default); off: "
        "the executor's claim decides (profile paper). See docs/verification.md.")] = None,
    grammar: Annotated[bool, typer.Option(
        "--grammar/--no-grammar", help="Constrained decoding: send the game's action and plan "
        "grammars (applied by local: models and endpoints with guided_decoding).")] = False,
    act_only: Annotated[bool, typer.Option(
        "--act-only", help="ReAct executor without thoughts or self-assessment.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Benchmark strategies on TextCraft (the paper's tables 4 and 7, figure 4).

    Example: adapt bench textcraft --limit 40 --strategies adapt,react --d-max 1,2,3,4
    --model 'sim:textcraft?capability=1&error_rate=0.1&seed=7' --out runs/tc --plot
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from adapt.bench.report import TaskRecord, print_table, write_report
    from adapt.bench.textcraft import (
        parse_d_max,
        parse_profiles,
        parse_strategies,
        run_bench,
        select_tasks,
    )
    from adapt.engine import RunConfig

    setup_logging(verbose)
    if plot and out is None:
        fail("--plot writes PNG files: give --out DIR too")
    try:
        names = parse_strategies(strategies)
        profiles = parse_profiles(profile)
        depths = parse_d_max(d_max)
        selected = select_tasks(split, depth, limit)
        if plot:
            from adapt.bench.plots import require_matplotlib

            require_matplotlib()  # fail now, not after the run, when matplotlib is missing
        bench_models, price = load_bench_models(model, executor_model, planner_model)
    except ValidationError as exc:
        fail(validation_message(exc))
    except UserError as exc:
        fail(str(exc))

    total = len(selected) * len(names) * len(depths) * len(bench_models) * len(profiles)
    done = wins = tokens = 0
    progress = Progress(
        TextColumn("[bold]textcraft"), BarColumn(), MofNCompleteColumn(),
        TextColumn("success {task.fields[rate]}"), TextColumn("tokens {task.fields[tokens]}"),
        TimeElapsedColumn(), console=err,
    )
    bar = progress.add_task("bench", total=total, rate="–", tokens="0")

    def on_result(record: TaskRecord) -> None:
        nonlocal done, wins, tokens
        done += 1
        wins += record.solved
        tokens += record.usage.total_tokens
        progress.update(bar, advance=1, rate=f"{100 * wins / done:.1f}%", tokens=f"{tokens:,}")

    try:
        with progress:
            report = run_bench(
                split=split, depth=depth, limit=limit, strategies=names, d_max=depths,
                models=bench_models, concurrency=concurrency, seed=seed, price=price,
                on_result=on_result, executor_kind=executors, prompts=prompts,
                profiles=profiles,
                base_config=RunConfig.model_validate(
                    {"monitor": {} if monitor is None else {"enabled": monitor},
                     **({} if planner_max_tokens is None
                        else {"planner": {"max_tokens": planner_max_tokens}}),
                     **({} if verification is None else {"verification": verification}),
                     **({"grammar": True} if grammar else {}),
                     **({"executor": {"act_only": True}} if act_only else {})}),
            )
    except ValidationError as exc:
        fail(validation_message(exc))
    except UserError as exc:
        fail(str(exc))
    print_table(report, Console())
    if out is not None:
        paths = write_report(report, out)
        if plot:
            from adapt.bench.plots import write_plots

            paths += write_plots(report, out)
        err.print("wrote " + ", ".join(str(p) for p in paths))


@bench_app.command("sql")
def bench_sql(
    path: Annotated[Path, typer.Argument(
        help="The InterCode-SQL data directory (holding ic_spider_dev.json) or that file.")],
    hardness: Annotated[str | None, typer.Option(
        help="Comma-separated levels: easy,medium,hard,extra (default: all).")] = None,
    db: Annotated[str | None, typer.Option(help="Only the tasks of this database.")] = None,
    limit: Annotated[int | None, typer.Option(
        min=1, help="At most N tasks, taking the hardness levels in turn.")] = None,
    designs: Annotated[str, typer.Option(
        help="Comma-separated designs: react, stateflow, plan_and_execute.")] = (
        "react,stateflow,plan_and_execute"
    ),
    d_max: Annotated[int, typer.Option("--d-max", help="RunConfig.d_max (1..8).")] = 3,
    model: Annotated[str | None, typer.Option(
        help="Model spec of a real OpenAI-compatible endpoint, e.g. openai:gpt-4o-mini or "
        "'openai:llama3@http://127.0.0.1:11434/v1' (default: the settings' model when an "
        "OpenAI key is set).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Task runs at once.")] = 8,
    profile: Annotated[str, typer.Option(
        "--profile", help="Comma-separated profiles to compare side by side: default, paper "
        "(the published protocols; see docs/reproducing-the-papers.md).")] = "default",
    out: Annotated[Path | None, typer.Option(
        help="Write report.json, report.md and tasks.jsonl here.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Benchmark agent designs on InterCode-SQL (needs MariaDB and a real model).

    Example: OPENAI_API_KEY=... ADAPT_ALLOW_REMOTE_LLM=1 adapt bench sql PATH
    --model openai:gpt-4o-mini --limit 40 --out runs/sql
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from adapt.bench.sql import (
        SQLTaskRecord,
        parse_designs,
        parse_hardness,
        print_sql_table,
        require_model_spec,
        run_sql_bench,
        select_sql_tasks,
        write_sql_report,
    )
    from adapt.bench.textcraft import BenchModel, parse_d_max, parse_profiles
    from adapt.llm.base import Usage
    from adapt.llm.pricing import Pricing
    from adapt.settings import OPENAI_DEFAULT_MODEL, get_settings
    from adapt.standalone import load_models

    setup_logging(verbose)
    try:
        names = parse_designs(designs)
        profiles = parse_profiles(profile)
        levels = parse_hardness(hardness)
        parse_d_max(d_max)
        settings = get_settings()
        default = settings.default_model or (OPENAI_DEFAULT_MODEL if settings.openai_api_key
                                             else None)
        spec = require_model_spec(model or default)
        selected = select_sql_tasks(path, levels, db, limit)
        pricing = Pricing.from_setting(settings.pricing)
        loaded = load_models(settings, model=spec)
        bench_model = BenchModel(loaded.executor, loaded.planner)
    except ValidationError as exc:
        fail(validation_message(exc))
    except UserError as exc:
        fail(str(exc))

    def price(name: str, usage: Usage, simulated: bool) -> float | None:
        return pricing.cost(name, usage, simulated=simulated)

    done = wins = 0
    progress = Progress(
        TextColumn("[bold]intercode-sql"), BarColumn(), MofNCompleteColumn(),
        TextColumn("success {task.fields[rate]}"), TimeElapsedColumn(), console=err,
    )
    bar = progress.add_task("bench", total=len(selected) * len(names) * len(profiles), rate="–")

    def on_result(record: SQLTaskRecord) -> None:
        nonlocal done, wins
        done += 1
        wins += record.solved
        progress.update(bar, advance=1, rate=f"{100 * wins / done:.1f}%")

    try:
        with progress:
            report = run_sql_bench(
                path, models=bench_model, hardness=levels, db=db, limit=limit, designs=names,
                d_max=d_max, concurrency=concurrency, price=price, task_list=selected,
                on_result=on_result, profiles=profiles,
            )
    except UserError as exc:
        fail(str(exc))
    print_sql_table(report, Console())
    if out is not None:
        paths = write_sql_report(report, out)
        err.print("wrote " + ", ".join(str(p) for p in paths))




@bench_app.command("monitor")
def bench_monitor(
    model: Annotated[str, typer.Option(
        help="A sim:textcraft spec; its format_error_rate is set per run.")] = (
        "sim:textcraft?capability=1&error_rate=0.1&seed=7"),
    format_error_rates: Annotated[str, typer.Option(
        "--format-error-rates", help="Comma-separated format error rates to compare.")] = (
        "0,0.1,0.2,0.3"),
    strategies: Annotated[str, typer.Option(help="Comma-separated strategies.")] = "adapt",
    d_max: Annotated[int, typer.Option("--d-max", min=1, max=8)] = 4,
    split: Annotated[str, typer.Option(help="Task split: dev | test | all.")] = "test",
    limit: Annotated[int | None, typer.Option(min=1, help="At most N tasks.")] = None,
    concurrency: Annotated[int, typer.Option(min=1)] = 8,
    out: Annotated[Path | None, typer.Option(
        help="Write report.json, report.md and tasks.jsonl here.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """How many nodes the decoding monitor saves when the model's output is malformed.

    Runs each strategy on the same TextCraft tasks with the monitor off and on, for each
    format error rate of the simulated model. Offline; about 20 s for the test split.
    """
    import asyncio

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from adapt.bench.monitor import (
        noisy_spec,
        parse_rates,
        run_monitor_bench,
        table,
        to_markdown,
    )
    from adapt.bench.report import TaskRecord, write_outputs
    from adapt.bench.textcraft import parse_strategies, select_tasks

    setup_logging(verbose)
    try:
        names = parse_strategies(strategies)
        rates = parse_rates(format_error_rates)
        noisy_spec(model, 0.0)
        tasks = select_tasks(split, None, limit)
    except UserError as exc:
        fail(str(exc))
    progress = Progress(TextColumn("[bold]monitor"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err)
    bar = progress.add_task("bench", total=len(tasks) * len(names) * len(rates) * 2)

    def on_result(record: TaskRecord) -> None:
        progress.update(bar, advance=1)

    try:
        with progress:
            bench = asyncio.run(run_monitor_bench(
                model=model, rates=rates, strategies=names, d_max=d_max, split=split,
                limit=limit, concurrency=concurrency, on_result=on_result))
    except UserError as exc:
        fail(str(exc))
    headers, rows = table(bench)
    grid = Table(title=f"Decoding monitor: {bench.task_count} {split} tasks, d_max {d_max}")
    for h in headers:
        grid.add_column(h, justify="left" if h == "strategy" else "right")
    for row in rows:
        grid.add_row(*row)
    Console().print(grid)
    if out is not None:
        paths = write_outputs(out, report_json=bench.model_dump_json(indent=2),
                              markdown=to_markdown(bench), records=bench.rows)
        err.print("wrote " + ", ".join(str(p) for p in paths))


@bench_app.command("alfworld")
def bench_alfworld(
    split: Annotated[str, typer.Option(
        help="Games: dev | test (generated, offline) or train | valid_seen | valid_unseen (the "
        "official ALFWorld games; need --data-dir or ALFWORLD_DATA).")] = "test",
    task_type: Annotated[str | None, typer.Option(
        "--task-type", help="Comma-separated task types (pick, clean, heat, cool, examine, "
        "pick_two); default: all.")] = None,
    limit: Annotated[int | None, typer.Option(
        min=1, help="At most N games, taking the task types in turn.")] = None,
    data_dir: Annotated[str | None, typer.Option(
        "--data-dir", help="ALFWorld's data folder (holding json_2.1.1/) for official "
        "splits; default $ALFWORLD_DATA.")] = None,
    strategies: Annotated[str, typer.Option(
        help="Comma-separated strategy names, e.g. adapt,react.")] = "adapt,react",
    d_max: Annotated[str, typer.Option("--d-max", help="Maximum decomposition depth, or a "
                                       "comma-separated list (e.g. 1,2,3).")] = "3",
    model: Annotated[list[str] | None, typer.Option(
        help="Model spec for both roles; repeat to compare models side by side. Default: the "
        "settings' default.")] = None,
    executor_model: Annotated[str | None, typer.Option("--executor-model")] = None,
    planner_model: Annotated[str | None, typer.Option("--planner-model")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Task runs at once.")] = 4,
    seed: Annotated[int, typer.Option(help="RunConfig.seed for every run.")] = 0,
    profile: Annotated[str, typer.Option(
        "--profile", help="Comma-separated profiles to compare side by side: default, paper "
        "(the published protocols; see docs/reproducing-the-papers.md).")] = "default",
    executors: Annotated[str, typer.Option(
        help="Comma-separated executor designs to compare, e.g. react,stateact.")] = "react",
    out: Annotated[Path | None, typer.Option(
        help="Write report.json, report.md and tasks.jsonl here.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Benchmark strategies on ALFWorld: success by task type (ADaPT table 2).

    Needs the alfworld extra (pip install -e ".[alfworld]"). Example: adapt bench alfworld
    --split test --limit 30 --model 'openai:llama3@http://127.0.0.1:11434/v1' --out runs/alf
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from adapt.bench.textcraft import (
        parse_d_max,
        parse_executor_kinds,
        parse_profiles,
        parse_strategies,
    )

    setup_logging(verbose)
    try:  # without the extra, importing the environment says how to install it
        import adapt.envs.alfworld  # noqa: F401
        from adapt.bench.alfworld import (
            ALFWorldTaskRecord,
            print_alfworld_table,
            run_alfworld_bench,
            select_games,
            write_alfworld_report,
        )
    except ImportError as exc:
        fail(str(exc))

    try:
        names = parse_strategies(strategies)
        profiles = parse_profiles(profile)
        kinds = parse_executor_kinds(executors)
        depths = parse_d_max(d_max)
        selected = select_games(split, task_type, limit, data_dir)
        bench_models, price = load_bench_models(model, executor_model, planner_model)
    except ValidationError as exc:
        fail(validation_message(exc))
    except UserError as exc:
        fail(str(exc))

    total = (len(selected) * len(names) * len(depths) * len(bench_models) * len(profiles)
             * len(kinds))
    done = wins = 0
    progress = Progress(TextColumn("[bold]alfworld"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("success {task.fields[rate]}"), TimeElapsedColumn(),
                        console=err)
    bar = progress.add_task("bench", total=total, rate="–")

    def on_result(record: ALFWorldTaskRecord) -> None:
        nonlocal done, wins
        done += 1
        wins += record.solved
        progress.update(bar, advance=1, rate=f"{100 * wins / done:.1f}%")

    err.print(f"generating and validating {len(selected)} games (cached per process)...")
    try:
        with progress:
            report = run_alfworld_bench(
                split=split, task_types=task_type, limit=limit, data_dir=data_dir,
                strategies=names, d_max=depths, models=bench_models, concurrency=concurrency,
                seed=seed, price=price, on_result=on_result, profiles=profiles,
                executor_kind=kinds)
    except UserError as exc:
        fail(str(exc))
    print_alfworld_table(report, Console())
    if out is not None:
        paths = write_alfworld_report(report, out)
        err.print("wrote " + ", ".join(str(p) for p in paths))
