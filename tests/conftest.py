"""Shared fixtures. No test may reach a real LLM provider: the guard is locked off here."""

from __future__ import annotations

import os

os.environ["ADAPT_ALLOW_REMOTE_LLM"] = "0"

try:
    from adapt.llm import guard as _guard
except ImportError:  # pragma: no cover - during bootstrap
    _guard = None  # type: ignore[assignment]
if _guard is not None and hasattr(_guard, "forbid_remote"):
    _guard.forbid_remote()
