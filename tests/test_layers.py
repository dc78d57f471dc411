"""The layer rule: the library (``adapt``) does not depend on the service's processes (``api``,
``workers``); they depend on it. Nothing that ships (``adapt``, ``api``, ``workers``) imports the
performance benchmarks (``benchmarks/``, outside the wheel); they may import every layer.

The one exception is the CLI's ``adapt serve`` and ``adapt worker`` commands
(``adapt/cli/service.py``), which start the server and the worker: they import ``api`` and
``workers`` inside the command functions, so importing ``adapt.cli`` loads neither.

Every import statement counts (at module level or inside a function), and so does Python code
held in a string (a script a module runs in a subprocess).

Inside the service's processes, the API's routes call the service (``adapt.service``: the
facade, its errors, its reports) and never reach past it into the store or the engine. Below
the service, the store raises the service's lease errors, so it imports
``adapt.service.errors`` (a leaf module) and nothing else of the service.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ("api", "workers")
#: top-level package -> the packages it may not import (``benchmarks`` is not installed)
FORBIDDEN = {"adapt": (*SERVICE, "benchmarks"), "api": ("benchmarks",),
             "workers": ("benchmarks",)}
#: module -> the service modules it may import, inside functions only
ALLOWED = {"adapt/cli/service.py": {"api.serve", "workers.celery_app"}}
SCRIPT_IMPORT = re.compile(r"^\s*(?:from|import)\s+(api|workers|benchmarks)\b", re.MULTILINE)


def _imports(tree: ast.AST) -> list[tuple[str, int, bool]]:
    """(module, line, inside a function) of every absolute import."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, inside) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module, child.lineno, inside))
            visit(child, inside)

    visit(tree, False)
    return found


def violations() -> list[str]:
    bad: list[str] = []
    used: dict[str, set[str]] = {}
    for package, forbidden in FORBIDDEN.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for module, line, in_function in _imports(tree):
                if module.split(".")[0] not in forbidden:
                    continue
                if in_function and module in ALLOWED.get(rel, set()):
                    used.setdefault(rel, set()).add(module)
                else:
                    bad.append(f"{rel}:{line}: imports {module}")
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    for match in SCRIPT_IMPORT.finditer(node.value):
                        if match.group(1) in forbidden:
                            bad.append(f"{rel}:{node.lineno}: a script in a string imports "
                                       f"{match.group(1)}")
    if used != ALLOWED:  # the exception is stated exactly: no stale entries
        bad.append(f"the exception changed: {used} != {ALLOWED}")
    return bad


def reaching_past(folder: str, forbidden: tuple[str, ...],
                  allowed: frozenset[str] = frozenset()) -> list[str]:
    """Imports in ``folder`` of a module under one of ``forbidden`` (except ``allowed``)."""
    bad: list[str] = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for module, line, _ in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if module in allowed:
                continue
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                bad.append(f"{rel}:{line}: imports {module}")
    return bad


def test_routes_call_the_service_not_the_store_or_the_engine() -> None:
    assert reaching_past("api/routes", ("adapt.store", "adapt.engine")) == []


def test_the_store_raises_the_service_errors_and_imports_nothing_else_of_it() -> None:
    from adapt.service import errors
    from adapt.store import attempt, task_rows

    assert attempt.LeaseLost is errors.LeaseLost and task_rows.TaskGone is errors.TaskGone
    assert reaching_past("adapt/store", ("adapt.service",),
                         frozenset({"adapt.service.errors"})) == []


def test_the_library_does_not_import_the_service_processes() -> None:
    assert violations() == []


def test_the_check_sees_imports_in_functions_and_scripts(tmp_path: Path) -> None:
    tree = ast.parse("def f():\n    import workers.loop\nfrom api import main\n")
    assert _imports(tree) == [("workers.loop", 2, True), ("api", 3, False)]
    assert SCRIPT_IMPORT.search("import sys\nfrom api.main import create_app\n")
    assert SCRIPT_IMPORT.search("from benchmarks.perfkit import Clock\n")
    assert not SCRIPT_IMPORT.search("python -m benchmarks.tree_read")
