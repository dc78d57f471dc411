"""A run's configuration is defined once and resolved in one place (issue 35, item 3): the
source is read, so a second definition or a second place that applies a profile fails here.

- A profile is applied by one function, ``_apply_profile`` in ``adapt/engine/resolve.py``,
  which only ``resolve_config`` calls: nothing else reads a profile's settings.
- The budget figures are declared by the engine's ``Budget`` alone; the API's budget maps each
  of them by name from it, and the settings use ``Budget`` itself.
- The models of a run are one field of the engine's configs: ``ResolvedConfig.models``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from adapt.engine.budget import Budget
from adapt.engine.config import (
    ExecutorConfig,
    ModelSpecs,
    MonitorConfig,
    PlannerConfig,
    ResolvedConfig,
    RunConfig,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("adapt", "api", "workers", "benchmarks")
#: what reads a profile's settings (``adapt/engine/profiles.py`` defines them)
PROFILE_READERS = {"profile_settings", "executor_settings", "paper_profile"}
#: ``max_tokens`` is also the executor's and the planner's: the figures only the budget has
BUDGET_ONLY = set(Budget.model_fields) - {"max_tokens"}


@functools.cache
def sources() -> dict[str, ast.Module]:
    return {str(path.relative_to(ROOT)): ast.parse(path.read_text(encoding="utf-8"))
            for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def calls_by_function(tree: ast.Module) -> list[tuple[str, str]]:
    """(the enclosing top-level function or class, the name called) for every call."""
    out: list[tuple[str, str]] = []
    for top in tree.body:
        owner = getattr(top, "name", "<module>")
        for node in ast.walk(top):
            if isinstance(node, ast.Call):
                func = node.func
                name = (func.id if isinstance(func, ast.Name) else
                        func.attr if isinstance(func, ast.Attribute) else "")
                out.append((owner, name))
    return out


def test_a_profile_is_applied_in_one_function() -> None:
    readers = {(path, owner) for path, tree in sources().items()
               for owner, name in calls_by_function(tree) if name in PROFILE_READERS
               and path != "adapt/engine/profiles.py"}
    # `adapt env serve` describes an environment's own paper settings to its clients (the
    # client's resolver applies them); it applies no profile itself
    assert readers == {("adapt/engine/resolve.py", "_apply_profile"),
                       ("adapt/envserve/app.py", "describe")}
    callers = {(path, owner) for path, tree in sources().items()
               for owner, name in calls_by_function(tree) if name == "_apply_profile"}
    assert callers == {("adapt/engine/resolve.py", "resolve_config")}


def budget_declarations() -> dict[tuple[str, str], dict[str, ast.expr | None]]:
    """Every class that declares a budget figure: (file, class) -> figure -> its value."""
    found: dict[tuple[str, str], dict[str, ast.expr | None]] = {}
    for path, tree in sources().items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for stmt in node.body:
                if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                        and stmt.target.id in BUDGET_ONLY):
                    found.setdefault((path, node.name), {})[stmt.target.id] = stmt.value
    return found


def test_the_budget_figures_are_declared_once() -> None:
    found = budget_declarations()
    assert set(found) == {("adapt/engine/budget.py", "Budget"),
                          ("api/schemas/run_config.py", "Budget")}
    # the API's maps each figure from the engine's, by its own name
    for name, value in found[("api/schemas/run_config.py", "Budget")].items():
        assert isinstance(value, ast.Call) and ast.unparse(value) == (
            f"engine(EngineBudget, {name!r})"), ast.unparse(value) if value else None


def test_the_settings_use_the_engines_budget() -> None:
    from adapt.settings import Settings

    for name in ("default_budget", "max_budget"):
        assert Settings.model_fields[name].annotation is Budget


def test_a_runs_models_are_one_field() -> None:
    """No section of the engine's config names models; the resolved config's ``models`` does."""
    for model in (RunConfig, ExecutorConfig, PlannerConfig, MonitorConfig, Budget):
        assert not {"model", "models"} & set(model.model_fields), model
    assert ResolvedConfig.model_fields["models"].annotation == ModelSpecs | None
