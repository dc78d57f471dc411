"""The `adapt bench` commands (registered on the main CLI in adapt/cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from adapt.cli_support import err, fail, setup_logging, validation_message
from adapt.errors import UserError

bench_app = typer.Typer(help="Benchmarks: success rates, decomposition depth, calls, cost.",
                        no_args_is_help=True)


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
    out: Annotated[Path | None, typer.Option(
        help="Write report.json, report.md, tasks.jsonl (and the PNGs) here.")] = None,
    plot: Annotated[bool, typer.Option(help="Write PNG plots into --out (needs matplotlib).")] = (
        False
    ),
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
        BenchModel,
        parse_d_max,
        parse_strategies,
        run_bench,
        select_tasks,
    )
    from adapt.llm.base import Usage
    from adapt.llm.pricing import Pricing
    from adapt.runlocal import load_models
    from adapt.settings import get_settings

    setup_logging(verbose)
    if plot and out is None:
        fail("--plot writes PNG files: give --out DIR too")
    try:
        names = parse_strategies(strategies)
        depths = parse_d_max(d_max)
        selected = select_tasks(split, depth, limit)
        settings = get_settings()
        pricing = Pricing.from_setting(settings.pricing)
        if plot:
            from adapt.bench.plots import require_matplotlib

            require_matplotlib()  # fail now, not after the run, when matplotlib is missing
        bench_models: list[BenchModel] = []
        specs: list[str | None] = list(model) if model else [None]
        for spec in specs:
            loaded = load_models(settings, model=spec, executor_model=executor_model,
                                 planner_model=planner_model)
            if loaded.notice:
                err.print(f"[yellow]note:[/] {loaded.notice}")
            bench_models.append(BenchModel(loaded.executor, loaded.planner))
    except ValidationError as exc:
        fail(validation_message(exc))
    except UserError as exc:
        fail(str(exc))

    def price(name: str, usage: Usage, simulated: bool) -> float | None:
        return pricing.cost(name, usage, simulated=simulated)

    total = len(selected) * len(names) * len(depths) * len(bench_models)
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
                on_result=on_result, executor_kind=executors,
            )
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
    from adapt.bench.textcraft import BenchModel, parse_d_max
    from adapt.llm.base import Usage
    from adapt.llm.pricing import Pricing
    from adapt.runlocal import load_models
    from adapt.settings import OPENAI_DEFAULT_MODEL, get_settings

    setup_logging(verbose)
    try:
        names = parse_designs(designs)
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
    bar = progress.add_task("bench", total=len(selected) * len(names), rate="–")

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
                on_result=on_result,
            )
    except UserError as exc:
        fail(str(exc))
    print_sql_table(report, Console())
    if out is not None:
        paths = write_sql_report(report, out)
        err.print("wrote " + ", ".join(str(p) for p in paths))


