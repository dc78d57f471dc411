"""Errors live in one module, and runtime invariants are checked by code, not ``assert``.

- Every exception class of the library's hierarchy (a subclass of a class of
  ``adapt.errors``) is defined in ``adapt/errors.py``; other modules may re-export it.
  Exceptions private to one module (a solver's ``Unsolvable``) and a plug-in environment's own
  errors (the calculator's ``CalculationError``) are not part of that hierarchy.
- No ``assert`` statement in ``adapt/``, ``api/`` or ``workers/``: ``python -O`` drops them, so a
  broken invariant would pass silently (tests and the conformance kit may assert).
"""

from __future__ import annotations

import ast
from pathlib import Path

import adapt.errors

ROOT = Path(__file__).resolve().parents[1]
ERRORS = ROOT / "adapt" / "errors.py"
#: modules whose job is to assert (the plug-in conformance kit raises on failed checks)
ASSERTING = {ROOT / "adapt" / "envs" / "testing.py"}


def _sources(*packages: str) -> list[Path]:
    return [p for package in packages for p in sorted((ROOT / package).rglob("*.py"))]


def _library_error_names() -> set[str]:
    return {name for name, value in vars(adapt.errors).items()
            if isinstance(value, type) and issubclass(value, BaseException)
            and value.__module__ == "adapt.errors"}


def test_library_errors_are_defined_in_errors_py() -> None:
    names = _library_error_names()
    assert {"UserError", "SubmissionInvalid", "LeaseLost", "GrammarError"} <= names
    elsewhere = []
    for path in _sources("adapt", "api", "workers"):
        if path == ERRORS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute)
                     else "" for b in node.bases}
            if bases & names:
                elsewhere.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not elsewhere, f"define these in adapt/errors.py (re-export them here): {elsewhere}"


def test_no_assert_for_runtime_invariants() -> None:
    found = [f"{path.relative_to(ROOT)}:{node.lineno}"
             for path in _sources("adapt", "api", "workers") if path not in ASSERTING
             for node in ast.walk(ast.parse(path.read_text(), str(path)))
             if isinstance(node, ast.Assert)]
    assert not found, f"raise instead of assert (python -O drops asserts): {found}"
