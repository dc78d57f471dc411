"""Errors live in one module per audience, and runtime invariants are checked by code, not
``assert``.

- Every exception class of the library's hierarchy (a subclass of a class of
  ``adapt.errors``) is defined in ``adapt/errors.py``; other modules may re-export it.
  Exceptions private to one module (a solver's ``Unsolvable``) and a plug-in environment's own
  errors (the calculator's ``CalculationError``) are not part of that hierarchy.
- The service's errors (a submission refused, a lease lost) are a hierarchy of their own, in
  ``adapt/service/errors.py``, apart from the library's; each error a client sees carries the
  HTTP status and problem type the API answers it with.
- No ``assert`` statement in ``adapt/``, ``api/`` or ``workers/``: ``python -O`` drops them, so a
  broken invariant would pass silently (tests and the conformance kit may assert).
"""

from __future__ import annotations

import ast
from pathlib import Path

import adapt.errors
import adapt.service.errors
from adapt.service.errors import ClientError, ServiceError

ROOT = Path(__file__).resolve().parents[1]
ERRORS = ROOT / "adapt" / "errors.py"
SERVICE_ERRORS = ROOT / "adapt" / "service" / "errors.py"
#: modules whose job is to assert (the plug-in conformance kit raises on failed checks)
ASSERTING = {ROOT / "adapt" / "envs" / "testing.py"}


def _sources(*packages: str) -> list[Path]:
    return [p for package in packages for p in sorted((ROOT / package).rglob("*.py"))]


def _error_names(module: object) -> set[str]:
    return {name for name, value in vars(module).items()
            if isinstance(value, type) and issubclass(value, BaseException)
            and value.__module__ == getattr(module, "__name__", None)}


def _defined_elsewhere(names: set[str], home: Path) -> list[str]:
    """Classes outside ``home`` (in adapt/, api/, workers/) that subclass one of ``names``."""
    elsewhere = []
    for path in _sources("adapt", "api", "workers"):
        if path == home:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute)
                     else "" for b in node.bases}
            if bases & names:
                elsewhere.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    return elsewhere


def test_library_errors_are_defined_in_errors_py() -> None:
    names = _error_names(adapt.errors)
    assert {"UserError", "TaskInterrupted", "GrammarError", "InvalidCursor"} <= names
    elsewhere = _defined_elsewhere(names, ERRORS)
    assert not elsewhere, f"define these in adapt/errors.py (re-export them here): {elsewhere}"


def test_service_errors_are_apart_from_the_library_errors() -> None:
    names = _error_names(adapt.service.errors)
    assert {"SubmissionInvalid", "RateLimited", "IdempotencyConflict", "NotResumable",
            "LeaseLost", "TaskGone"} <= names
    assert not names & _error_names(adapt.errors), "a service error in the library's module"
    assert not issubclass(ServiceError, adapt.errors.AdaptError)
    elsewhere = _defined_elsewhere(names, SERVICE_ERRORS)
    assert not elsewhere, f"define these in adapt/service/errors.py: {elsewhere}"
    # a leaf module: the store below the service raises these too
    imported = [n.module for n in ast.walk(ast.parse(SERVICE_ERRORS.read_text()))
                if isinstance(n, ast.ImportFrom) and n.module]
    assert not [m for m in imported if m.split(".")[0] == "adapt"], imported


def test_every_client_error_says_how_the_api_answers_it() -> None:
    def subclasses(cls: type[ClientError]) -> list[type[ClientError]]:
        return [c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))]

    answers = {}
    for cls in subclasses(ClientError):
        # 503: what the client asked for needs a server that does not answer now
        assert 400 <= cls.status < 500 or cls.status == 503, cls
        assert cls.problem_type and cls.problem_type != ClientError.problem_type, cls
        answers[cls.__name__] = (cls.status, cls.problem_type)
    assert answers["RateLimited"] == (429, "rate-limited")
    assert answers["IdempotencyConflict"] == (409, "idempotency-conflict")
    assert answers["SubmissionInvalid"] == (422, "validation-error")
    assert answers["NotFound"] == (404, "not-found")


def test_no_assert_for_runtime_invariants() -> None:
    found = [f"{path.relative_to(ROOT)}:{node.lineno}"
             for path in _sources("adapt", "api", "workers") if path not in ASSERTING
             for node in ast.walk(ast.parse(path.read_text(), str(path)))
             if isinstance(node, ast.Assert)]
    assert not found, f"raise instead of assert (python -O drops asserts): {found}"
