"""Prompts stored once: content-addressed blocks, and the one function that reads a call's
prompt back.

A call's prompt (or its chat messages and the tools it offered, encoded as one text) is a chain
of blocks in
``prompt_blocks``: each block holds a piece of text and the hash of the block before it, and
is addressed by the hash of (parent, text), so the same prefix is the same chain wherever it
occurs. A call stores only the hash of its last block (``llm_calls.prompt_ref``). Two ways a
prompt is cut into blocks, both decided by the text alone:

- it extends a prompt the same node sent before (the executor's trajectory grows by one step
  per call): one new block holding the difference, after the earlier prompt's last block;
- otherwise at paragraph boundaries (blank lines), so that the shared header and few-shot
  examples of every prompt built from one template are the same blocks, stored once for all
  tasks.

:func:`call_prompts` rebuilds the exact text (the node detail, exports and the OpenTelemetry
exporter read prompts through it); replay needs no prompt text (it checks the request
fingerprint, stored with the call).

Blocks are shared by every task whose prompts hold them, so deleting a task deletes only the
blocks no other call's chain holds (:func:`chain_blocks` before, :func:`collect_blocks` after).
A writer may be about to point a new call (or block) at a block it takes as stored while a
deletion removes it: the foreign keys from ``llm_calls.prompt_ref`` and
``prompt_blocks.parent`` make the database refuse one of the two (on PostgreSQL the writer's
check locks the block against the delete, or the delete's check sees the writer's row; SQLite
writes one transaction at a time), and a refused writer sends its batch's blocks again
(``adapt.store.sink``).
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import bindparam, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.store.models import LLMCallRow

#: a paragraph shorter than this is joined to the next one (fewer, larger blocks)
MIN_BLOCK = 256
_PROMPT, _MESSAGES = "P", "M"


def block_hash(parent: str | None, text: str) -> str:
    """The address of a block: 128 bits of SHA-256 over (parent, text), as 32 hex digits."""
    h = hashlib.sha256((parent or "").encode())
    h.update(b"\x00")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


# -- documents: a prompt or a list of messages as one text -------------------------------------
_TOOLS = "T"
#: the fields of a message besides role and content (chat with tools)
_EXTRAS = ("tool_calls", "tool_call_id")


def _message(m: dict[str, Any]) -> str:
    """``role:length\n`` + content; a message with tool fields ``role;n:length\n`` + those
    fields as n characters of JSON + content (documents written before tools read as ever)."""
    extras = {k: m[k] for k in _EXTRAS if m.get(k) is not None}
    if not extras:
        return f"{m['role']}:{len(m['content'])}\n{m['content']}"
    blob = json.dumps(extras, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f"{m['role']};{len(blob)}:{len(m['content'])}\n{blob}{m['content']}"


def encode(prompt: str | None, messages: Sequence[dict[str, Any]] | None,
           tools: Sequence[dict[str, Any]] | None = None) -> str | None:
    """One text for a call's prompt (``P`` + the prompt) or messages (``M`` + each message,
    see :func:`_message`), led by the tools it offered when it offered some (``T`` + their
    JSON's length + ``\n`` + the JSON: the same for every call of a node, so a node's next
    call still extends its previous document); None when the call has neither."""
    head = ""
    if tools:
        blob = json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"))
        head = f"{_TOOLS}{len(blob)}\n{blob}"
    if messages:
        return head + _MESSAGES + "".join(_message(m) for m in messages)
    if prompt is not None:
        return head + _PROMPT + prompt
    return None


def stored(document: str) -> StoredPrompt:
    """Inverse of :func:`encode`."""
    tools = None
    if document.startswith(_TOOLS):
        newline = document.index("\n")
        size = int(document[1:newline])
        tools = json.loads(document[newline + 1:newline + 1 + size])
        document = document[newline + 1 + size:]
    if document.startswith(_PROMPT):
        return StoredPrompt(document[1:], None, tools)
    if not document.startswith(_MESSAGES):
        raise ValueError("not a stored prompt document")
    messages: list[dict[str, Any]] = []
    at = 1
    while at < len(document):
        colon = document.index(":", at)
        newline = document.index("\n", colon)
        size = int(document[colon + 1:newline])
        role, _, extra = document[at:colon].partition(";")
        start = newline + 1
        message: dict[str, Any] = {"role": role}
        if extra:
            fields = json.loads(document[start:start + int(extra)])
            start += int(extra)
        else:
            fields = {}
        message["content"] = document[start:start + size]
        message.update(fields)
        messages.append(message)
        at = start + size
    return StoredPrompt(None, messages, tools)


def decode(document: str) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The prompt and messages of a document (:func:`stored` has its tools too)."""
    found = stored(document)
    return found.prompt, found.messages


def paragraphs(document: str) -> list[str]:
    """``document`` cut after blank lines, pieces shorter than ``MIN_BLOCK`` joined to the next
    (so the cut depends only on the text before it)."""
    pieces: list[str] = []
    start = at = 0
    while True:
        at = document.find("\n\n", at)
        if at < 0:
            break
        at += 2
        if at - start >= MIN_BLOCK:
            pieces.append(document[start:at])
            start = at
    if start < len(document) or not pieces:
        pieces.append(document[start:])
    return pieces


# -- writing --------------------------------------------------------------------------------
#: block hashes known to be stored, per database engine (a deletion in this process forgets
#: what it deleted; one elsewhere makes a write refused, and the writer forgets them all)
_known: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
KNOWN_MAX = 200_000


def known_blocks(engine_key: Any) -> set[str]:
    known = _known.get(engine_key)
    if known is None or len(known) > KNOWN_MAX:
        known = _known[engine_key] = set()
    return known


#: how many (node, role) last prompts a writer keeps: a node's calls come one after another,
#: so a few are enough, and a task of thousands of nodes does not keep every prompt
LAST_PROMPTS = 32


class PromptWriter:
    """Cuts one task's prompts into blocks (the state of one sink: the last prompt of the
    nodes that called most recently)."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self._last: OrderedDict[tuple[int | None, str], tuple[str, str]] = OrderedDict()

    def add(self, node_id: int | None, role: str, document: str,
            blocks: dict[str, dict[str, Any]],
            chain: dict[str, dict[str, Any]] | None = None) -> str:
        """The ref (last block's hash) of ``document``; the blocks not known to be stored yet
        are added to ``blocks`` (hash -> row), and every block this call adds to the chains
        (known or not, parents first) to ``chain``: what to send when a block taken as stored
        was deleted meanwhile."""
        key = (node_id, role)
        last = self._last.get(key)
        if last is not None and document.startswith(last[0]):
            parent: str | None = last[1]
            pieces = [document[len(last[0]):]] if len(document) > len(last[0]) else []
        else:
            parent, pieces = None, paragraphs(document)
        for piece in pieces:
            ref = block_hash(parent, piece)
            row = {"hash": ref, "parent": parent, "text": piece}
            if ref not in self.known and ref not in blocks:
                blocks[ref] = row
            if chain is not None and ref not in chain:
                chain[ref] = row
            parent = ref
        if parent is None:  # paragraphs() cuts a non-empty document into one block or more
            raise ValueError("an empty prompt document cannot be stored")
        self._last[key] = (document, parent)
        self._last.move_to_end(key)
        if len(self._last) > LAST_PROMPTS:
            self._last.popitem(last=False)
        return parent


# -- reading --------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoredPrompt:
    """What a call sent: a prompt (completions) or messages (chat), and the tools it offered;
    all None when prompts were not stored (``ADAPT_STORE_PROMPTS=false``)."""

    prompt: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None


_CHAINS = text(
    "WITH RECURSIVE chain(hash, parent, text) AS ("
    " SELECT hash, parent, text FROM prompt_blocks WHERE hash IN :refs"
    " UNION SELECT b.hash, b.parent, b.text FROM prompt_blocks b"
    " JOIN chain c ON b.hash = c.parent)"
    " SELECT hash, parent, text FROM chain"
).bindparams(bindparam("refs", expanding=True))


async def documents(session: AsyncSession, refs: Iterable[str]) -> dict[str, str]:
    """ref -> the document its chain spells (one statement, whatever the number of refs)."""
    wanted = sorted(set(refs))
    if not wanted:
        return {}
    rows = (await session.execute(_CHAINS, {"refs": wanted})).all()
    blocks = {str(r[0]): (r[1], str(r[2])) for r in rows}
    out: dict[str, str] = {}
    for ref in wanted:
        parts: list[str] = []
        at: str | None = ref
        while at is not None and at in blocks:
            parent, piece = blocks[at]
            parts.append(piece)
            at = parent
        if at is None:  # a complete chain (a missing block leaves the prompt unknown)
            out[ref] = "".join(reversed(parts))
    return out


async def call_prompts(session: AsyncSession, task_id: str,
                       call_ids: Sequence[int] | None = None) -> dict[int, StoredPrompt]:
    """The full prompt or messages of the task's calls (all, or ``call_ids``), by call id: the
    one way to read what a call sent. Two statements however many calls."""
    stmt = select(LLMCallRow.id, LLMCallRow.prompt, LLMCallRow.messages,
                  LLMCallRow.prompt_ref).where(LLMCallRow.task_id == task_id)
    if call_ids is not None:
        stmt = stmt.where(LLMCallRow.id.in_(list(call_ids)))
    rows = (await session.execute(stmt)).all()
    docs = await documents(session, (r.prompt_ref for r in rows if r.prompt_ref))
    out: dict[int, StoredPrompt] = {}
    for r in rows:
        if r.prompt_ref and r.prompt_ref in docs:
            out[int(r.id)] = stored(docs[r.prompt_ref])
        else:  # stored inline (rows written before blocks existed), or not stored
            out[int(r.id)] = StoredPrompt(r.prompt, r.messages)
    return out


# -- deleting -------------------------------------------------------------------------------
_TASK_CHAINS = text(
    "WITH RECURSIVE chain(hash, parent) AS ("
    " SELECT b.hash, b.parent FROM prompt_blocks b JOIN llm_calls c ON c.prompt_ref = b.hash"
    " WHERE c.task_id IN :ids"
    " UNION SELECT b.hash, b.parent FROM prompt_blocks b JOIN chain c ON b.hash = c.parent)"
    " SELECT hash FROM chain"
).bindparams(bindparam("ids", expanding=True))

#: the candidates as rows, from one JSON array parameter (any number of them)
_CANDIDATES = {
    "postgresql": "SELECT value AS hash FROM jsonb_array_elements_text(CAST(:cand AS jsonb))",
    "sqlite": "SELECT value AS hash FROM json_each(:cand)",
}
#: delete the candidates no remaining chain holds: a candidate is kept when a call names it, or
#: a block that is no candidate has it as parent, or it is the parent of a kept candidate
_COLLECT = (
    "WITH RECURSIVE cand(hash) AS ({candidates}),"
    " seed(hash) AS ("
    "  SELECT c.hash FROM cand c WHERE EXISTS"
    "   (SELECT 1 FROM llm_calls l WHERE l.prompt_ref = c.hash)"
    "  UNION SELECT b.parent FROM prompt_blocks b WHERE b.parent IN (SELECT hash FROM cand)"
    "   AND b.hash NOT IN (SELECT hash FROM cand)),"
    " kept(hash) AS ("
    "  SELECT hash FROM seed"
    "  UNION SELECT b.parent FROM prompt_blocks b JOIN kept k ON b.hash = k.hash"
    "   WHERE b.parent IN (SELECT hash FROM cand))"
    " DELETE FROM prompt_blocks WHERE hash IN (SELECT hash FROM cand)"
    " AND hash NOT IN (SELECT hash FROM kept) RETURNING hash"
)


async def chain_blocks(session: AsyncSession, task_ids: Sequence[str]) -> list[str]:
    """Every block in the chains of the tasks' calls: what deleting them may leave unused."""
    if not task_ids:
        return []
    rows = await session.execute(_TASK_CHAINS, {"ids": list(task_ids)})
    return sorted(str(h) for h in rows.scalars())


async def collect_blocks(session: AsyncSession, candidates: Sequence[str]) -> list[str]:
    """Delete, in the caller's transaction, the ``candidates`` that no call's chain holds any
    more (one statement); returns their hashes. A call written meanwhile that points at one of
    them makes the foreign keys refuse the statement (``IntegrityError``): run it again, it
    then sees that call."""
    if not candidates:
        return []
    dialect = session.get_bind().dialect.name
    statement = text(_COLLECT.format(candidates=_CANDIDATES[dialect]))
    rows = await session.execute(statement, {"cand": orjson.dumps(list(candidates)).decode()})
    return [str(h) for h in rows.scalars()]


def forget_blocks(engine_key: Any, hashes: Iterable[str]) -> None:
    """This process's writers no longer take ``hashes`` as stored."""
    known = _known.get(engine_key)
    if known is not None:
        known.difference_update(hashes)
