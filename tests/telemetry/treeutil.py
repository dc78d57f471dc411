"""Span trees for the trace tests: any span (an SDK ``ReadableSpan``, a span record, a span
read back from Phoenix) reduced to what identifies it in a task's tree, whatever the task id."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Flat:
    span_id: int
    parent_id: int | None
    name: str
    attributes: dict[str, Any]


def key(span: Flat) -> tuple[Any, ...]:
    """What the span stands for: its name and the node, call and step it records."""
    a = span.attributes
    return (span.name, a.get("adapt.node.id"), a.get("adapt.llm.call_id"),
            a.get("adapt.step.index"))


def structure(spans: Iterable[Flat]) -> set[tuple[tuple[Any, ...], tuple[Any, ...] | None]]:
    """(span, its parent) pairs by key: two runs of the same task compare equal."""
    spans = list(spans)
    by_id = {s.span_id: s for s in spans}
    return {(key(s), key(by_id[s.parent_id]) if s.parent_id in by_id else None) for s in spans}


def from_sdk(spans: Iterable[Any]) -> list[Flat]:
    return [Flat(s.context.span_id, s.parent.span_id if s.parent is not None else None, s.name,
                 dict(s.attributes or {})) for s in spans]


def from_records(spans: Iterable[Any]) -> list[Flat]:
    return [Flat(s.span_id, s.parent_id, s.name, dict(s.attributes)) for s in spans]
