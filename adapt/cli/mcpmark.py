"""``adapt bench mcpmark``: MCPMark's runnable Filesystem tasks (adapt/eval/mcpmark.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from adapt.cli.bench import (
    Concurrency,
    ExecutorModel,
    Models,
    Out,
    PlannerModel,
    Strategies,
    Verbose,
    app,
    load_bench_models,
    run_with_progress,
    user_errors,
    wrote,
)
from adapt.cli.support import setup_logging


@app.command("mcpmark")
def bench_mcpmark(
    data: Annotated[Path | None, typer.Argument(
        help="MCPMark's Filesystem folder (default ../shared/data/mcpmark-filesystem).")] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Runs per task (MCPMark: 4).")] = 1,
    tasks: Annotated[str | None, typer.Option(
        help="Comma-separated task ids (default: the 6 runnable ones).")] = None,
    strategies: Strategies = "react",
    d_max: Annotated[int, typer.Option("--d-max", min=1, max=8)] = 3,
    max_steps: Annotated[int, typer.Option(
        "--max-steps", min=1, help="Executor steps per node (MCPMark: 100 turns).")] = 100,
    server_command: Annotated[str | None, typer.Option(
        "--server-command", help="How to start the filesystem server (its folder is "
        "appended); default: the copy .ci/run installs, else npx with the pinned "
        "version.")] = None,
    model: Models = None,
    executor_model: ExecutorModel = None,
    planner_model: PlannerModel = None,
    concurrency: Concurrency = 2,
    out: Out = None,
    verbose: Verbose = False,
) -> None:
    """MCPMark Filesystem: the 6 tasks with an initial state, k runs each (pass@1, pass^k,
    tool calls, tokens, cost), MCPMark's published figures beside.

    Example: adapt bench mcpmark --model openai:gpt-5-mini --k 4 --out runs/mcpmark
    """
    from adapt.eval.grid import parse_strategies
    from adapt.eval.mcpmark import (
        default_data_dir,
        load_tasks,
        rows,
        run_mcpmark_bench,
        write_report,
    )
    from adapt.eval.mcpmark import (
        server_command as find_server,
    )
    from adapt.eval.report import print_wide, rich_table

    setup_logging(verbose)
    folder = data or default_data_dir()
    with user_errors():
        names = parse_strategies(strategies)
        chosen = [t.strip() for t in tasks.split(",")] if tasks else None
        count = len(chosen) if chosen else len(load_tasks(folder))
        server = find_server(server_command)
        bench_models, price = load_bench_models(model, executor_model, planner_model)
    total = count * k * len(names) * len(bench_models)
    report = run_with_progress("mcpmark", total, lambda on_result: run_mcpmark_bench(
        folder, models=bench_models, strategies=names, k=k, d_max=d_max, server=server,
        task_ids=chosen, price=price, max_steps=max_steps, concurrency=concurrency,
        on_result=on_result))
    headers, body = rows(report)
    print_wide(rich_table(f"MCPMark Filesystem, k={report.k}", headers, body,
                          left=("strategy", "model", "task")), [], Console())
    if out is not None:
        wrote(write_report(report, out))
