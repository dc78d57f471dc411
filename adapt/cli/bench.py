"""``adapt bench``: the benchmarks (TextCraft, InterCode-SQL, InterCode-Bash, ALFWorld, the
decoding monitor).

The options the commands share are declared once below (``Strategies``, ``Profiles``,
``Concurrency``, ...; those ``adapt run`` shares in :mod:`adapt.cli.run_options`), and so are the steps they share: bad options exit 2 with the message
(:func:`user_errors`), the models and pricing come from the settings (:func:`load_bench_models`),
a progress bar runs on stderr while the grid runs (:func:`run_with_progress`), and ``--out``
gets the report files (:func:`wrote`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from inspect import Parameter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from adapt.cli import reuse_options
from adapt.cli.run_options import ActOnly, CascadeMode, Grammar, Verification, run_options
from adapt.cli.support import err, fail, setup_logging, validation_message
from adapt.errors import UserError

if TYPE_CHECKING:
    from adapt.engine.runtime import PriceFn
    from adapt.eval.designs import DesignBench, DesignReport
    from adapt.eval.grid import BenchModel

R = TypeVar("R")

app = typer.Typer(help="Benchmarks: success rates, decomposition depth, calls, cost.",
                  no_args_is_help=True)

# -- the options the commands share ---------------------------------------------------------------
Strategies = Annotated[str, typer.Option(
    help="Comma-separated strategy names, e.g. adapt,react,plan_and_execute.")]
DepthList = Annotated[str, typer.Option(
    "--d-max", help="Maximum decomposition depth, or a comma-separated list (e.g. 1,2,3,4).")]
Depth = Annotated[int, typer.Option("--d-max", help="RunConfig.d_max (1..8).")]
Models = Annotated[list[str] | None, typer.Option(
    "--model", help="Model spec for both roles; repeat to compare models side by side. Default: "
    "the settings' default (the SIMULATED TextCraft model without an API key).")]
RealModel = Annotated[str | None, typer.Option(
    "--model", help="Model spec of a real OpenAI-compatible endpoint, e.g. openai:gpt-4o-mini or "
    "'openai:llama3@http://127.0.0.1:11434/v1' (default: the settings' model when an OpenAI key "
    "is set).")]
ExecutorModel = Annotated[str | None, typer.Option("--executor-model")]
PlannerModel = Annotated[str | None, typer.Option("--planner-model")]
Executors = Annotated[str, typer.Option(
    "--executors", help="Comma-separated executor designs to compare, e.g. react,stateact.")]
Concurrency = Annotated[int, typer.Option(min=1, help="Task runs at once.")]
Seed = Annotated[int, typer.Option(help="RunConfig.seed for every run.")]
Profiles = Annotated[str, typer.Option(
    "--profile", help="Comma-separated profiles to compare side by side: default, paper (the "
    "published protocols; see docs/reproducing-the-papers.md).")]
Limit = Annotated[int | None, typer.Option(min=1, help="At most N tasks, taking the groups "
                                           "(depths, levels, file systems, types) in turn.")]
Out = Annotated[Path | None, typer.Option(
    help="Write report.json, report.md and tasks.jsonl here.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v")]
# --verification, --grammar, --act-only, --cascade-mode: adapt/cli/run_options.py (adapt run's too)


# -- the steps the commands share -------------------------------------------------------------
@contextmanager
def user_errors() -> Iterator[None]:
    """Bad options or settings: exit 2 with the message, no traceback."""
    try:
        yield
    except ValidationError as exc:
        fail(validation_message(exc))
    except UserError as exc:
        fail(str(exc))


def load_bench_models(model: list[str] | None, executor_model: str | None = None,
                      planner_model: str | None = None, cascades: list[str] | None = None,
                      ) -> tuple[list[BenchModel], PriceFn]:
    """The models to compare (one per ``--model``, then one per ``--cascade``; the settings'
    default without either) and the pricing function. Raises ``UserError`` /
    ``ValidationError`` for bad specs or settings."""
    from adapt.cli.standalone import load_models
    from adapt.errors import InvalidConfig
    from adapt.eval.grid import BenchModel
    from adapt.llm.base import ChatModel, Usage
    from adapt.llm.pricing import Pricing
    from adapt.service.model_factory import ModelFactory
    from adapt.settings import get_settings

    settings = get_settings()
    pricing = Pricing(settings.pricing)
    bench_models: list[BenchModel] = []
    for spec in list(model) if model else ([] if cascades else [None]):
        loaded = load_models(settings, model=spec, executor_model=executor_model,
                             planner_model=planner_model)
        if loaded.notice:
            err.print(f"[yellow]note:[/] {loaded.notice}")
        bench_models.append(BenchModel(loaded.executor, loaded.planner))
    factory = ModelFactory(settings, operator=True)  # the same rules as --model
    built: dict[str, ChatModel] = {}  # one instance per spec (a local model loads once)

    def build(spec: str) -> ChatModel:
        if spec not in built:
            built[spec] = factory.build(spec)
        return built[spec]

    for value in cascades or []:
        specs = [s.strip() for s in value.split(",")]
        if len(specs) < 2 or not all(specs) or len(set(specs)) != len(specs):
            raise InvalidConfig(f"--cascade: give two or more different model specs separated "
                                f"by commas, weakest first (got {value!r})")
        chain = tuple(build(s) for s in specs)
        planner = build(planner_model) if planner_model else chain[0]
        bench_models.append(BenchModel(chain[0], planner, chain))

    def price(name: str, usage: Usage, simulated: bool) -> float | None:
        return pricing.cost(name, usage, simulated=simulated)

    return bench_models, price


def real_model_spec(model: str | None, require: Callable[[str | None], str]) -> str:
    """``--model`` or the settings' model, checked by ``require`` (no simulators)."""
    from adapt.settings import get_settings

    default, simulated_because = get_settings().resolve_default_model()
    return require(model or (None if simulated_because else default))


def run_with_progress(label: str, total: int, run: Callable[[Callable[[Any], None]], R], *,
                      rate: bool = True, tokens: bool = False) -> R:
    """``run(on_result)`` under a progress bar on stderr; user errors exit 2."""
    from adapt.eval.grid import progress

    try:
        with progress(label, total, err, rate_column=rate, tokens=tokens) as on_result:
            return run(on_result)
    except ValidationError as exc:
        fail(validation_message(exc))
    except UserError as exc:
        fail(str(exc))


def wrote(paths: list[Path]) -> None:
    err.print("wrote " + ", ".join(str(p) for p in paths))


@dataclass(frozen=True)
class DesignCommand:
    """What an InterCode bench command adds to the shared ones: its bench, its progress label,
    its entry point, and how it selects tasks (given ``--limit``)."""

    bench: DesignBench[Any, Any, Any]
    label: str
    run: Callable[..., DesignReport]
    path: Path
    select: Callable[[int | None], list[Any]]
    #: the selection options the entry point takes as well (``hardness``, ``task_set``, ...)
    selection: dict[str, Any] = field(default_factory=dict)


def design_command(name: str, *, designs: str) -> Callable[[Callable[..., DesignCommand]], None]:
    """Register an InterCode bench command: the decorated function declares only its own
    options (the data path, its task selection) and returns a :class:`DesignCommand`; the
    options every such bench has (``--designs`` with default ``designs``, ``--limit``,
    ``--d-max``, ``--model``, ``--concurrency``, ``--profile``, ``--verification``, ``--out``,
    ``--verbose``) are
    added here, and so is the run: options checked before anything runs, the designs on a real
    model under a progress bar, the table, ``--out``."""
    shared = [
        inspect.Parameter("limit", Parameter.KEYWORD_ONLY, default=None, annotation=Limit),
        inspect.Parameter("designs", Parameter.KEYWORD_ONLY, default=designs, annotation=Annotated[
            str, typer.Option(help=f"Comma-separated designs: {designs.replace(',', ', ')}.")]),
        inspect.Parameter("d_max", Parameter.KEYWORD_ONLY, default=3, annotation=Depth),
        inspect.Parameter("model", Parameter.KEYWORD_ONLY, default=None, annotation=RealModel),
        inspect.Parameter("concurrency", Parameter.KEYWORD_ONLY, default=8, annotation=Concurrency),
        inspect.Parameter("profile", Parameter.KEYWORD_ONLY, default="default", annotation=Profiles),
        inspect.Parameter("verification", Parameter.KEYWORD_ONLY, default=None,
                          annotation=Verification),
        inspect.Parameter("out", Parameter.KEYWORD_ONLY, default=None, annotation=Out),
        inspect.Parameter("verbose", Parameter.KEYWORD_ONLY, default=False, annotation=Verbose),
    ]

    def register(fn: Callable[..., DesignCommand]) -> None:
        own = inspect.signature(fn, eval_str=True)

        @functools.wraps(fn)
        def command(**kwargs: Any) -> None:
            options = {p.name: kwargs.pop(p.name) for p in shared}
            setup_logging(options["verbose"])
            run_design(fn(**kwargs), **options)

        signature = own.replace(parameters=[*own.parameters.values(), *shared],
                                return_annotation=None)
        command.__signature__ = signature  # type: ignore[attr-defined]  # what typer reads
        command.__annotations__ = {
            **{p.name: p.annotation for p in signature.parameters.values()}, "return": None}
        app.command(name)(command)

    return register


def run_design(cmd: DesignCommand, *, limit: int | None, designs: str, d_max: int,
               model: str | None, concurrency: int, profile: str, verification: str | None,
               out: Path | None, verbose: bool) -> None:
    from adapt.engine import RunConfig
    from adapt.eval.grid import parse_d_max, parse_profiles

    with user_errors():
        base_config = RunConfig.model_validate(run_options(verification=verification))
        names = cmd.bench.parse_designs(designs)
        profiles = parse_profiles(profile)
        parse_d_max(d_max)
        spec = real_model_spec(model, cmd.bench.require_model_spec)
        selected = cmd.select(limit)
        (bench_model,), price = load_bench_models([spec])
    report = run_with_progress(cmd.label, len(selected) * len(names) * len(profiles),
                               lambda on_result: cmd.run(
        cmd.path, models=bench_model, designs=names, d_max=d_max, concurrency=concurrency,
        price=price, task_list=selected, on_result=on_result, profiles=profiles, limit=limit,
        base_config=base_config, **cmd.selection))
    cmd.bench.print_table(report, Console())
    if out is not None:
        wrote(cmd.bench.write_report(report, out))


# -- the commands -------------------------------------------------------------------------------
@app.command("textcraft")
def bench_textcraft(
    split: Annotated[str, typer.Option(help="Task split: dev | test | all.")] = "test",
    depth: Annotated[int | None, typer.Option(min=1, help="Only tasks of this recipe depth.")] = (
        None
    ),
    limit: Annotated[int | None, typer.Option(
        min=1, help="At most N tasks, stratified across recipe depths (with --tasks: the "
        "file's first N).")] = None,
    task_file: Annotated[Path | None, typer.Option(
        "--tasks", help="A file of task ids, one a line, run in its order instead of "
        "--split/--depth (e.g. docs/data/textcraft-test-24.txt).")] = None,
    strategies: Strategies = "adapt,react",
    d_max: DepthList = "4",
    model: Models = None,
    executor_model: ExecutorModel = None,
    planner_model: PlannerModel = None,
    cascade: Annotated[list[str] | None, typer.Option(
        "--cascade", help="A model cascade (executor.models): comma-separated executor model "
        "specs, weakest first; a failed node is retried with the next. Repeat to compare "
        "cascades; each is a column next to the --model ones. The planner: --planner-model, "
        "else the cascade's first model.")] = None,
    cascade_mode: CascadeMode = None,
    executors: Executors = "react",
    concurrency: Concurrency = 8,
    seed: Seed = 0,
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
    profile: Profiles = "default",
    verification: Verification = None,
    grammar: Grammar = False,
    act_only: ActOnly = False,
    reuse: reuse_options.Reuse = False,
    reuse_kinds: reuse_options.ReuseKinds = "skills",
    plans_mode: reuse_options.PlansMode = "reuse",
    warm_split: reuse_options.WarmSplit = None,
    warm_limit: reuse_options.WarmLimit = None,
    library_in: reuse_options.LibraryIn = None,
    library_out: reuse_options.LibraryOut = None,
    library_learn: reuse_options.LibraryLearn = False,
    verbose: Verbose = False,
) -> None:
    """Benchmark strategies on TextCraft (the paper's tables 4 and 7, figure 4).

    Example: adapt bench textcraft --limit 40 --strategies adapt,react --d-max 1,2,3,4
    --model 'sim:textcraft?capability=1&error_rate=0.1&seed=7' --out runs/tc --plot
    """
    from adapt.engine import RunConfig
    from adapt.eval.grid import parse_d_max, parse_profiles, parse_strategies
    from adapt.eval.report import TaskRecord, print_table, write_report
    from adapt.eval.textcraft import read_task_ids, run_bench, select_tasks

    setup_logging(verbose)
    if plot and out is None:
        fail("--plot writes PNG files: give --out DIR too")
    with user_errors():
        names = parse_strategies(strategies)
        profiles = parse_profiles(profile)
        depths = parse_d_max(d_max)
        selected = (read_task_ids(task_file, limit) if task_file is not None
                    else select_tasks(split, depth, limit))
        if plot:
            from adapt.eval.plots import require_matplotlib

            require_matplotlib()  # fail now, not after the run, when matplotlib is missing
        bench_models, price = load_bench_models(model, executor_model, planner_model, cascade)
        base_config = RunConfig.model_validate(
            {"monitor": {} if monitor is None else {"enabled": monitor},
             **({} if planner_max_tokens is None
                else {"planner": {"max_tokens": planner_max_tokens}}),
             **run_options(verification=verification, grammar=grammar, act_only=act_only,
                           cascade_mode=cascade_mode)})
        library, base_config = reuse_options.prepare(
            base_config, reuse=reuse, warm_split=warm_split, warm_limit=warm_limit,
            library_in=library_in, library_out=library_out, model=bench_models[0],
            d_max=depths[0], concurrency=concurrency, seed=seed, executors=executors,
            prompts=prompts, profile=profiles[0], kinds=reuse_kinds, plans_mode=plans_mode)

    partial = None
    if out is not None:  # each task's record as it finishes: a run stopped early keeps them
        out.mkdir(parents=True, exist_ok=True)
        partial = out / "tasks.partial.jsonl"
        partial.write_text("", encoding="utf-8")

    def keeping(on_result: Callable[[TaskRecord], None]) -> Callable[[TaskRecord], None]:
        def record(result: TaskRecord) -> None:
            if partial is not None:
                with partial.open("a", encoding="utf-8") as fh:
                    fh.write(result.model_dump_json() + "\n")
            on_result(result)

        return record

    total = len(selected) * len(names) * len(depths) * len(bench_models) * len(profiles)
    report = run_with_progress("textcraft", total, lambda on_result: run_bench(
        split=split, depth=depth, limit=limit, strategies=names, d_max=depths,
        models=bench_models, concurrency=concurrency, seed=seed, price=price,
        on_result=keeping(on_result), executor_kind=executors, prompts=prompts,
        profiles=profiles, task_list=selected if task_file is not None else None,
        base_config=base_config, library=library, learn=library_learn), tokens=True)
    print_table(report, Console())
    if library is not None:
        err.print(reuse_options.summary(report.results))
    if out is not None:
        paths = write_report(report, out)
        if plot:
            from adapt.eval.plots import write_plots

            paths += write_plots(report, out)
        wrote(paths)


@design_command("sql", designs="react,stateflow,plan_and_execute")
def bench_sql(
    path: Annotated[Path, typer.Argument(
        help="The InterCode-SQL data directory (holding ic_spider_dev.json) or that file.")],
    hardness: Annotated[str | None, typer.Option(
        help="Comma-separated levels: easy,medium,hard,extra (default: all).")] = None,
    db: Annotated[str | None, typer.Option(help="Only the tasks of this database.")] = None,
) -> DesignCommand:
    """Benchmark agent designs on InterCode-SQL (needs MariaDB and a real model).

    Example: OPENAI_API_KEY=... ADAPT_ALLOW_REMOTE_LLM=1 adapt bench sql PATH
    --model openai:gpt-4o-mini --limit 40 --out runs/sql
    """
    from adapt.eval import sql

    return DesignCommand(sql.BENCH, "intercode-sql", sql.run_sql_bench, path,
                         lambda limit: sql.select_sql_tasks(path, hardness, db, limit),
                         {"hardness": hardness, "db": db})


@design_command("bash", designs="react,stateflow,stateact,plan_and_execute,adapt")
def bench_bash(
    path: Annotated[Path, typer.Argument(
        help="The InterCode-Bash data directory (nl2bash_fs_*.json, setup_nl2b_fs_*.sh).")],
    task_set: Annotated[str, typer.Option(
        "--task-set", help="fs1 | fs2 | fs3 | fs4 | all (the 200).")] = "all",
) -> DesignCommand:
    """Benchmark agent designs on InterCode-Bash (needs bubblewrap and a real model).

    Example: OPENAI_API_KEY=... ADAPT_ALLOW_REMOTE_LLM=1 adapt bench bash PATH
    --task-set all --model openai:gpt-4o-mini --limit 40 --out runs/bash
    """
    from adapt.eval import bash

    return DesignCommand(bash.BENCH, "intercode-bash", bash.run_bash_bench, path,
                         lambda limit: bash.select_bash_tasks(path, task_set, limit),
                         {"task_set": task_set})


@app.command("monitor")
def bench_monitor(
    model: Annotated[str, typer.Option(
        help="A sim:textcraft spec; its format_error_rate is set per run.")] = (
        "sim:textcraft?capability=1&error_rate=0.1&seed=7"),
    format_error_rates: Annotated[str, typer.Option(
        "--format-error-rates", help="Comma-separated format error rates to compare.")] = (
        "0,0.1,0.2,0.3"),
    strategies: Strategies = "adapt",
    d_max: Depth = 4,
    split: Annotated[str, typer.Option(help="Task split: dev | test | all.")] = "test",
    limit: Limit = None,
    concurrency: Concurrency = 8,
    out: Out = None,
    verbose: Verbose = False,
) -> None:
    """How many nodes the decoding monitor saves when the model's output is malformed.

    Runs each strategy on the same TextCraft tasks with the monitor off and on, for each
    format error rate of the simulated model. Offline; about 20 s for the test split.
    """
    import asyncio

    from rich.table import Table

    from adapt.eval.grid import parse_d_max, parse_strategies
    from adapt.eval.monitor_savings import (
        noisy_spec,
        parse_rates,
        run_monitor_bench,
        table,
        to_markdown,
    )
    from adapt.eval.report import write_outputs
    from adapt.eval.textcraft import select_tasks
    from adapt.llm.openai_compat.pool import closing_default_pool

    setup_logging(verbose)
    with user_errors():
        names = parse_strategies(strategies)
        parse_d_max(d_max)  # in RunConfig.d_max's range
        rates = parse_rates(format_error_rates)
        noisy_spec(model, 0.0)
        tasks = select_tasks(split, None, limit)
    bench = run_with_progress(
        "monitor", len(tasks) * len(names) * len(rates) * 2, lambda on_result: asyncio.run(closing_default_pool(
            run_monitor_bench(model=model, rates=rates, strategies=names, d_max=d_max,
                              split=split, limit=limit, concurrency=concurrency,
                              on_result=on_result))), rate=False)
    headers, rows = table(bench)
    grid = Table(title=f"Decoding monitor: {bench.task_count} {split} tasks, d_max {d_max}")
    for h in headers:
        grid.add_column(h, justify="left" if h == "strategy" else "right")
    for row in rows:
        grid.add_row(*row)
    Console().print(grid)
    if out is not None:
        wrote(write_outputs(out, report_json=bench.model_dump_json(indent=2),
                            markdown=to_markdown(bench), records=bench.rows))


@app.command("alfworld")
def bench_alfworld(
    split: Annotated[str, typer.Option(
        help="Games: dev | test (generated, offline) or train | valid_seen | valid_unseen (the "
        "official ALFWorld games; need --data-dir or ALFWORLD_DATA).")] = "test",
    task_type: Annotated[str | None, typer.Option(
        "--task-type", help="Comma-separated task types (pick, clean, heat, cool, examine, "
        "pick_two); default: all.")] = None,
    limit: Limit = None,
    data_dir: Annotated[str | None, typer.Option(
        "--data-dir", help="ALFWorld's data folder (holding json_2.1.1/) for official "
        "splits; default $ALFWORLD_DATA.")] = None,
    strategies: Strategies = "adapt,react",
    d_max: DepthList = "3",
    model: Models = None,
    executor_model: ExecutorModel = None,
    planner_model: PlannerModel = None,
    concurrency: Concurrency = 4,
    seed: Seed = 0,
    profile: Profiles = "default",
    executors: Executors = "react",
    verification: Verification = None,
    out: Out = None,
    verbose: Verbose = False,
) -> None:
    """Benchmark strategies on ALFWorld: success by task type (ADaPT table 2).

    Needs the alfworld extra (pip install -e ".[alfworld]"). Example: adapt bench alfworld
    --split test --limit 30 --model 'openai:llama3@http://127.0.0.1:11434/v1' --out runs/alf
    """
    from adapt.engine import RunConfig
    from adapt.eval.grid import (
        parse_d_max,
        parse_executor_kinds,
        parse_profiles,
        parse_strategies,
    )

    setup_logging(verbose)
    try:  # without the extra, importing the environment says how to install it
        import adapt.envs.alfworld  # noqa: F401
        from adapt.eval.alfworld import (
            print_alfworld_table,
            run_alfworld_bench,
            select_games,
            write_alfworld_report,
        )
    except ImportError as exc:
        fail(str(exc))

    with user_errors():
        names = parse_strategies(strategies)
        profiles = parse_profiles(profile)
        kinds = parse_executor_kinds(executors)
        depths = parse_d_max(d_max)
        selected = select_games(split, task_type, limit, data_dir)
        base_config = RunConfig.model_validate(run_options(verification=verification))
        bench_models, price = load_bench_models(model, executor_model, planner_model)

    total = (len(selected) * len(names) * len(depths) * len(bench_models) * len(profiles)
             * len(kinds))
    err.print(f"generating and validating {len(selected)} games (cached per process)...")
    report = run_with_progress("alfworld", total, lambda on_result: run_alfworld_bench(
        split=split, task_types=task_type, limit=limit, data_dir=data_dir, strategies=names,
        d_max=depths, models=bench_models, concurrency=concurrency, seed=seed, price=price,
        on_result=on_result, profiles=profiles, executor_kind=kinds, base_config=base_config))
    print_alfworld_table(report, Console())
    if out is not None:
        wrote(write_alfworld_report(report, out))
