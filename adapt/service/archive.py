"""Task archives: one finished task as a self-contained JSON document (``GET /tasks/{id}/export``,
``adapt tasks export``) that another deployment loads (``POST /tasks/import``, ``adapt tasks
import``) as a task of the importer's tenant, with an identical tree and calls a resumed run
replays without paying for them.

The document::

    {"format": "adapt.task-archive", "schema_version": 2, "adapt_version": "0.1.0",
     "exported_at": "...", "task": {...}, "nodes": [...], "steps": [...], "calls": [...],
     "prompt_blocks": [...], "events": [...], "approvals": [...]}

``task`` is the task row (without its tenant, idempotency key and lease); the sections are the
rows of the task's nodes, steps, LLM calls (with the request fingerprint and response replay
needs), events (as stored: an event names the step or call rows it is about) and the prompt
blocks of the calls' chains: a call's prompt is the text of the blocks from its ``prompt_ref``
up through each block's ``parent``, read in reverse (``adapt.store.prompts``; the node detail
of the importing deployment shows it whole), and the task's approval requests with their
decisions and audit (who decided, when, what changed; schema version 2: a version 1 archive,
which has none, is read too).

An import checks the document before anything is stored, and refuses it with a 422 naming the
field: the format and ``schema_version`` first, then every row against its table's columns, a
finished status, ids that are unique and that the rows refer to, event numbers 1..n, and each
prompt block's hash against its content (blocks are shared by every tenant: a block whose hash
does not address its text would change other tasks' prompts). The size is the API's body limit
(``ADAPT_MAX_BODY_BYTES``), which ``adapt tasks import`` applies as well.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from sqlalchemy import Boolean, Column, TypeDecorator
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine.tree import FINAL_STATUSES
from adapt.service.errors import InvalidField
from adapt.store import archive as rows
from adapt.store import task_rows
from adapt.store.models import Task, utcnow
from adapt.store.prompts import block_hash
from adapt.store.text import UNSTORABLE_MESSAGE, find_unstorable
from adapt.version import __version__

FORMAT = "adapt.task-archive"
#: the archive layout this release writes; a change to it is a new number (2: ``approvals``)
SCHEMA_VERSION = 2
#: the layouts this release reads (1 has no ``approvals``)
READS = frozenset({1, 2})


# -- the document's shape, from the tables ----------------------------------------------------
#: what a column of each integer type holds (a larger number is a 422, not a database error)
_INT_BOUNDS = {"BigInteger": 2**63 - 1, "Integer": 2**31 - 1}


def _python_type(column: Column[Any], nullable: bool) -> Any:
    kind_of = column.type.impl if isinstance(column.type, TypeDecorator) else column.type
    try:
        kind: Any = kind_of.python_type
    except NotImplementedError:  # JSON
        return Any
    length = getattr(kind_of, "length", None)
    if kind is str and length:
        kind = Annotated[str, Field(max_length=length)]
    elif kind is int and not isinstance(kind_of, Boolean):
        bound = _INT_BOUNDS.get(type(kind_of).__name__, 2**31 - 1)
        kind = Annotated[int, Field(ge=-bound - 1, le=bound)]
    return kind | None if nullable else kind


def _row_model(name: str, columns: list[Column[Any]],
               whole: frozenset[str] = frozenset()) -> type[BaseModel]:
    """``whole``: columns that an archive holds whole though the table may store NULL."""
    fields: dict[str, Any] = {}
    for column in columns:
        nullable = bool(column.nullable) and column.key not in whole
        required = not nullable and column.default is None and column.server_default is None
        fields[column.key] = (_python_type(column, nullable), ... if required else None)
    model: type[BaseModel] = create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
    return model


@functools.cache
def archive_model() -> type[BaseModel]:
    sections: dict[str, Any] = {}
    for section in rows.SECTIONS:
        row: Any = _row_model(f"Archive_{section}", rows.section_columns(section),
                              rows.ARCHIVED_WHOLE.get(section, frozenset()))
        sections[section] = ((list[row], Field(default_factory=list)) if section == "approvals"
                             else (list[row], ...))
    model: type[BaseModel] = create_model(
        "TaskArchive", __config__=ConfigDict(extra="forbid"),
        format=(str, ...), schema_version=(int, ...), adapt_version=(str | None, None),
        exported_at=(datetime | None, None),
        task=(_row_model("Archive_task", rows.task_columns()), ...), **sections)
    return model


# -- export ---------------------------------------------------------------------------------
async def export_task(session: AsyncSession, task: Task) -> dict[str, Any]:
    """The archive of ``task`` (finished: the caller checks)."""
    body = await rows.read_task(session, task.id)
    return {"format": FORMAT, "schema_version": SCHEMA_VERSION, "adapt_version": __version__,
            "exported_at": utcnow().isoformat(), **body}


# -- import ---------------------------------------------------------------------------------
def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check(document: Any) -> dict[str, Any]:
    """The archive, checked; its rows with Python values. ``InvalidField`` names what is
    wrong."""
    if not isinstance(document, dict):
        raise InvalidField("body", "an archive is a JSON object (what GET /tasks/{id}/export "
                           "returns)")
    if document.get("format") != FORMAT:
        raise InvalidField("format", f"not a task archive: expected {FORMAT!r}")
    version = document.get("schema_version")
    if type(version) is not int or version not in READS:
        raise InvalidField("schema_version", f"this release reads archives of schema version "
                           f"{' or '.join(map(str, sorted(READS)))}, not {version!r}; import "
                           "it with the release "
                           "that exported it, or export it again from a release that writes "
                           f"version {SCHEMA_VERSION}")
    bad = find_unstorable(document, "")
    if bad:
        parts = bad.lstrip(".").split(".")
        raise InvalidField(_field(tuple(int(p) if p.isdigit() else p for p in parts)),
                           UNSTORABLE_MESSAGE)
    try:
        parsed = archive_model().model_validate(document)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InvalidField(_field(error["loc"]), error["msg"]) from None
    checked: dict[str, Any] = parsed.model_dump(exclude_unset=False)
    _check_references(checked)
    return checked


def _unique(section: str, items: list[dict[str, Any]], keys: tuple[str, ...]) -> set[Any]:
    seen: set[Any] = set()
    for i, item in enumerate(items):
        key = tuple(item[k] for k in keys) if len(keys) > 1 else item[keys[0]]
        if key in seen:
            raise InvalidField(f"{section}[{i}].{keys[-1]}", f"a second row with {key!r}")
        seen.add(key)
    return seen


def _check_references(doc: dict[str, Any]) -> None:
    task = doc["task"]
    if task["status"] not in FINAL_STATUSES:
        raise InvalidField("task.status", f"{task['status']!r}: only a finished task can be "
                           "imported")
    nodes = _unique("nodes", doc["nodes"], ("id",))
    _unique("steps", doc["steps"], ("node_id", "index"))
    _unique("calls", doc["calls"], ("id",))
    for i, node in enumerate(doc["nodes"]):
        if node["parent_id"] is not None and node["parent_id"] not in nodes:
            raise InvalidField(f"nodes[{i}].parent_id", "names no node of the archive")
    for section in ("steps", "calls"):
        for i, item in enumerate(doc[section]):
            if item["node_id"] is not None and item["node_id"] not in nodes:
                raise InvalidField(f"{section}[{i}].node_id", "names no node of the archive")
    _unique("approvals", doc["approvals"], ("id",))
    _unique("approvals", doc["approvals"], ("node_id", "kind", "number"))
    for i, item in enumerate(doc["approvals"]):
        if item["node_id"] not in nodes:
            raise InvalidField(f"approvals[{i}].node_id", "names no node of the archive")
    seqs = [e["seq"] for e in doc["events"]]
    if sorted(seqs) != list(range(1, len(seqs) + 1)) or task["last_seq"] != len(seqs):
        raise InvalidField("events", f"sequence numbers must be 1..{task['last_seq']} "
                           "(task.last_seq), each once")
    blocks: dict[str, str | None] = {}
    for i, block in enumerate(doc["prompt_blocks"]):
        if block_hash(block["parent"], block["text"]) != block["hash"]:
            raise InvalidField(f"prompt_blocks[{i}].hash", "is not the hash of the block's "
                               "parent and text")
        blocks[block["hash"]] = block["parent"]
    for i, block in enumerate(doc["prompt_blocks"]):
        if block["parent"] is not None and block["parent"] not in blocks:
            raise InvalidField(f"prompt_blocks[{i}].parent", "names no block of the archive")
    for i, call in enumerate(doc["calls"]):
        if call["prompt_ref"] is not None and call["prompt_ref"] not in blocks:
            raise InvalidField(f"calls[{i}].prompt_ref", "names no block of the archive")


async def import_task(session: AsyncSession, document: Any, tenant: str) -> Task:
    """Check ``document`` and store it as a new task of ``tenant`` (committed); the row."""
    checked = check(document)
    task_id = task_rows.new_id()
    await rows.insert_task(session, task_id, tenant, checked)
    await session.commit()
    task = await session.get(Task, task_id)
    if task is None:  # pragma: no cover - inserted just above
        raise LookupError(task_id)
    return task
