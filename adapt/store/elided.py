"""Values a row already holds in another column are stored once (migration 0021).

- ``steps.text`` is NULL when it equals the step's ``raw`` (what the executor wrote is most
  often the action it took): read ``coalesce(text, raw)``.
- ``llm_calls.request_model`` is ``''`` when it equals the call's ``model`` (the model asked
  for is most often the one that answered): read ``model``. NULL keeps its meaning: the call
  recorded none (rows written before 0012). (A request model that is the empty string while
  the answer names another is read as that other: no model is named ``''``.)
- ``nodes.plan`` of a plan whose ``raw`` is the completion of one of its node's LLM calls (the
  planner's answer, about 700 bytes) holds ``"raw_call": <that call's id>`` instead: read
  :func:`whole_plan` with the call's completion.
- ``llm_calls.monitor`` is ``[]`` when it is the decoding monitor's record of a check that
  found nothing (:data:`CLEAN_CHECK`, most calls' record); a record is always an object, so
  ``[]`` names nothing else.

Every reader reads these through what is here: a row loaded as an ORM object
(``select(StepRow)``, ``select(LLMCallRow)``, ``select(NodeRow)``: the node's row comes with
the completion its plan names) gets the whole value from the load listeners of
``adapt.store.models``; a query that selects columns selects :func:`step_text` and
:func:`call_request_model` instead of the stored columns; an archive holds and takes whole
values (``adapt.store.archive``). The writers store :func:`stored_text` and
:func:`stored_request_model`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import case, func
from sqlalchemy.sql.elements import ColumnElement

#: ``llm_calls.request_model`` of a call whose request model is its ``model``
SAME_MODEL = ""
#: the key of a stored plan that names the call whose completion is its ``raw``
RAW_CALL = "raw_call"
#: the decoding monitor's record of one check that found nothing (``adapt.engine.spec``)
CLEAN_CHECK: dict[str, int] = {"validations": 1, "violations": 0, "corrections": 0}
#: ``llm_calls.monitor`` of a call whose record is :data:`CLEAN_CHECK`
STORED_CLEAN_CHECK: list[Any] = []


def stored_text(text: str, raw: str) -> str | None:
    """``steps.text`` as stored: None when it is the step's ``raw``."""
    return None if text == raw else text


def read_text(stored: str | None, raw: str) -> str:
    """A step's text from what ``steps.text`` stores (:func:`stored_text`'s inverse)."""
    return raw if stored is None else stored


def stored_request_model(request_model: str | None, model: str) -> str | None:
    """``llm_calls.request_model`` as stored: :data:`SAME_MODEL` when it is the call's
    ``model``."""
    return SAME_MODEL if request_model is not None and request_model == model else request_model


def read_request_model(stored: str | None, model: str) -> str | None:
    """A call's request model from what ``llm_calls.request_model`` stores
    (:func:`stored_request_model`'s inverse)."""
    return model if stored == SAME_MODEL else stored


def stored_monitor(record: dict[str, Any] | None) -> Any:
    """``llm_calls.monitor`` as stored: ``[]`` for :data:`CLEAN_CHECK` (the same keys and
    integers: a record ``{"validations": 1.0, ...}`` is kept as it is)."""
    if (isinstance(record, dict) and record.keys() == CLEAN_CHECK.keys()
            and all(type(record[k]) is int and record[k] == v for k, v in CLEAN_CHECK.items())):
        return STORED_CLEAN_CHECK
    return record


def read_monitor(stored: Any) -> dict[str, Any] | None:
    """A call's monitor record from what ``llm_calls.monitor`` stores
    (:func:`stored_monitor`'s inverse)."""
    if isinstance(stored, list) and not stored:
        return dict(CLEAN_CHECK)
    return stored  # type: ignore[no-any-return]


def stored_plan(plan: dict[str, Any] | None, calls: Mapping[str, int]) -> dict[str, Any] | None:
    """``nodes.plan`` as stored; ``calls``: completion -> id of the node's calls."""
    if not isinstance(plan, dict) or "raw_call" in plan:
        return plan
    call = calls.get(plan.get("raw"))  # type: ignore[arg-type]
    if call is None:
        return plan
    return {**{k: v for k, v in plan.items() if k != "raw"}, RAW_CALL: call}


def plan_call(stored: Any) -> int | None:
    """The call whose completion a stored plan's ``raw`` is (None: the plan holds it)."""
    if isinstance(stored, dict) and RAW_CALL in stored and "raw" not in stored:
        return int(stored[RAW_CALL])
    return None


def whole_plan(stored: Any, completion: str) -> dict[str, Any]:
    """A stored plan (:func:`plan_call` names a call) whole, ``raw`` first as the engine
    writes it; ``completion``: that call's."""
    return {"raw": completion, **{k: v for k, v in stored.items() if k != RAW_CALL}}


def step_text(text: Any, raw: Any) -> ColumnElement[str]:
    """The step's text, in SQL (``text`` and ``raw``: the columns of ``steps``)."""
    return func.coalesce(text, raw)


def call_request_model(request_model: Any, model: Any) -> ColumnElement[str | None]:
    """The call's request model, in SQL (the columns of ``llm_calls``)."""
    return case((request_model == SAME_MODEL, model), else_=request_model)


def whole_step(row: dict[str, Any]) -> dict[str, Any]:
    """A stored ``steps`` row (its columns by name) with its whole ``text``."""
    return {**row, "text": read_text(row.get("text"), row["raw"])}


def stored_step(row: dict[str, Any]) -> dict[str, Any]:
    """A whole ``steps`` row as stored (:func:`whole_step`'s inverse)."""
    return {**row, "text": stored_text(row["text"], row["raw"])}


def whole_call(row: dict[str, Any]) -> dict[str, Any]:
    """A stored ``llm_calls`` row (its columns by name) with its whole ``request_model`` and
    ``monitor``."""
    return {**row, "request_model": read_request_model(row.get("request_model"), row["model"]),
            "monitor": read_monitor(row.get("monitor"))}


def stored_call(row: dict[str, Any]) -> dict[str, Any]:
    """A whole ``llm_calls`` row as stored (:func:`whole_call`'s inverse)."""
    return {**row, "request_model": stored_request_model(row.get("request_model"),
                                                         row["model"]),
            "monitor": stored_monitor(row.get("monitor"))}
