"""``adapt bench textcraft``'s experience-library options: warm a library on one split (or
load an exported one), then test on another with skill reuse on (docs/experience.md).

    adapt bench textcraft --split test --strategies adapt --d-max 4 \\
        --model 'sim:textcraft?capability=1' --warm-split dev --library-out runs/lib.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from adapt.engine.experience import MemoryLibrary
from adapt.errors import InvalidConfig

if TYPE_CHECKING:
    from adapt.engine import RunConfig
    from adapt.eval.grid import BenchModel

Reuse = Annotated[bool, typer.Option(
    "--reuse/--no-reuse", help="Reuse (what --reuse-kinds names; by default reuse.skills: "
    "replay stored solutions of sub-goals before the executor runs); needs verification (on "
    "by default). Implied by --warm-split and --library-in.")]
ReuseKinds = Annotated[str, typer.Option(
    "--reuse-kinds", help="What the benchmark's runs reuse from the library (with --reuse, "
    "--warm-split or --library-in): skills | plans | skills,plans (reuse.skills, "
    "reuse.plans). Warming always learns and reuses both.")]
PlansMode = Annotated[str, typer.Option(
    "--plans-mode", help="How a stored plan is used (reuse.plans_mode): reuse (no planner "
    "call) | example (shown to the planner).")]
WarmSplit = Annotated[str | None, typer.Option(
    "--warm-split", help="First warm an experience library on this split (dev | test | all: "
    "adapt, the first --d-max and model, reuse on), then run the benchmark with it.")]
WarmLimit = Annotated[int | None, typer.Option(
    "--warm-limit", min=1, help="At most N warming tasks (stratified by depth).")]
LibraryIn = Annotated[Path | None, typer.Option(
    "--library-in", help="Start from this library (JSON of GET /library/export or "
    "--library-out).")]
LibraryOut = Annotated[Path | None, typer.Option(
    "--library-out", help="Write the library (after warming) here as JSON.")]
LibraryLearn = Annotated[bool, typer.Option(
    "--library-learn/--library-frozen", help="Whether the benchmark's runs add to the library "
    "and count replays (each cell its own copy); frozen by default: every task sees the "
    "warmed library.")]


def load_library(path: Path | None) -> MemoryLibrary:
    if path is None:
        return MemoryLibrary()
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
        return MemoryLibrary.load(document)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidConfig(f"--library-in: cannot read {str(path)!r}: {exc}") from None


def write_library(library: MemoryLibrary, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(library.export(), indent=1) + "\n", encoding="utf-8")
    return path


def parse_kinds(text: str) -> frozenset[str]:
    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(kinds - {"skills", "plans"})
    if unknown or not kinds:
        raise InvalidConfig(f"--reuse-kinds: use skills, plans or skills,plans, not {text!r}")
    return kinds


def with_reuse(config: RunConfig, kinds: frozenset[str] = frozenset({"skills"}),
               plans_mode: str = "reuse") -> RunConfig:
    if plans_mode not in ("reuse", "example"):
        raise InvalidConfig(f"--plans-mode: use reuse or example, not {plans_mode!r}")
    return config.model_copy(update={"reuse": config.reuse.model_copy(update={
        "skills": "skills" in kinds, "plans": "plans" in kinds, "plans_mode": plans_mode})})


def warm(library: MemoryLibrary, *, split: str, limit: int | None, model: BenchModel,
         d_max: int, base_config: RunConfig, concurrency: int, seed: int | None,
         executors: str, prompts: str, profile: str) -> dict[str, Any]:
    """Run adapt on ``split`` with reuse on (skills and plans), adding what it learns to
    ``library``; a summary."""
    from adapt.eval.textcraft import run_bench

    report = run_bench(split=split, limit=limit, strategies=["adapt"], d_max=[d_max],
                       models=[model], concurrency=concurrency, seed=seed,
                       base_config=with_reuse(base_config, frozenset({"skills", "plans"})),
                       executor_kind=executors,
                       prompts=prompts, profiles=profile, library=library, learn=True,
                       share_library=True)
    records = report.results
    return {"tasks": len(records), "solved": sum(r.success for r in records),
            "llm_calls": sum(r.usage.llm_calls for r in records),
            "entries": sum(1 for e in library.entries.values() if not e.dropped),
            "plans": sum(1 for e in library.entries.values()
                         if not e.dropped and e.kind == "plan")}


def prepare(base_config: RunConfig, *, reuse: bool, warm_split: str | None,
            warm_limit: int | None, library_in: Path | None, library_out: Path | None,
            model: BenchModel, d_max: int, concurrency: int, seed: int | None,
            executors: str, prompts: str, profile: str, kinds: str = "skills",
            plans_mode: str = "reuse") -> tuple[MemoryLibrary | None, RunConfig]:
    """The library the benchmark runs with (loaded, warmed, written as the options say) and
    the run config (reuse on when there is a library); ``(None, base_config)``: no reuse."""
    from adapt.cli.support import err
    from adapt.eval.textcraft import select_tasks

    config = with_reuse(base_config, parse_kinds(kinds), plans_mode)  # checked in any case
    if not (reuse or warm_split or library_in or library_out):
        return None, base_config
    library = load_library(library_in)
    if warm_split is not None:
        select_tasks(warm_split, None, warm_limit)  # an unknown split fails before any run
        summary = warm(library, split=warm_split, limit=warm_limit, model=model, d_max=d_max,
                       base_config=base_config, concurrency=concurrency, seed=seed,
                       executors=executors, prompts=prompts, profile=profile)
        err.print(f"library warmed on {warm_split}: {summary['tasks']} tasks, "
                  f"{summary['solved']} solved, {summary['llm_calls']} LLM calls, "
                  f"{summary['entries']} entries ({summary['plans']} plans)")
    if library_out is not None:
        err.print(f"wrote {write_library(library, library_out)}")
    return library, config


def summary(records: list[Any]) -> str:
    """One line per benchmark run with reuse: calls per task, success, false successes (a
    success the environment's reward does not back) and the nodes solved by a replay."""
    n = len(records) or 1
    false = sum(1 for r in records if r.success and r.reward < 1.0)
    return (f"reuse: {sum(r.usage.llm_calls for r in records) / n:.1f} LLM calls per task, "
            f"{sum(r.success for r in records)}/{len(records)} solved, {false} false "
            f"successes, {sum(getattr(r, 'reused_nodes', 0) for r in records)} nodes reused, "
            f"{sum(getattr(r, 'reused_plans', 0) for r in records)} plans reused, "
            f"{sum(getattr(r, 'replanned_plans', 0) for r in records)} failed and planned "
            "again")


__all__ = ["LibraryIn", "LibraryLearn", "LibraryOut", "PlansMode", "Reuse", "ReuseKinds",
           "WarmLimit", "WarmSplit", "load_library", "parse_kinds", "prepare", "summary", "warm", "with_reuse", "write_library"]
