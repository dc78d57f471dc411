"""JSON values stored compressed: ``events.packed`` (``adapt.store.event_log``).

A value is stored as one version byte and its compact JSON compressed with raw deflate against
a preset dictionary: the vocabulary of the event log (the fields of nodes, task results and
the short entries of a grouped row, and their common values), so that even a row of a few
hundred bytes compresses to a fraction (a dictionary-less deflate of such a short text saves
about half; with it, about four fifths). The dictionary holds no environment's or model's text.

Stored bytes must always read back: a dictionary is never changed once released. A better one
is a new version byte (and a new entry in :data:`_DICTIONARIES`); the old ones stay.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson

from adapt.store.text import storable

#: version 1: the event log's vocabulary as of migration 0020 (most frequent last: a match
#: close to the end of the dictionary is the cheapest to encode)
_V1 = (
    b'{"error":null,"result":{"goal":"","d_max":,"error":null,"nodes":,"usage":{"cost_usd":0.0,'
    b'"llm_calls":,"prompt_tokens":,"completion_tokens":},"reward":0.0,"status":"failed",'
    b'"monitor":{"violations":0,"corrections":0,"validations":},"profile":"default",'
    b'"success":false,"verdict":"refuted","strategy":"adapt","max_depth":,"wall_seconds":,'
    b'"usage_by_role":{"planner":{"cost_usd":0.0,"llm_calls":,"prompt_tokens":,'
    b'"completion_tokens":},"executor":{"cost_usd":0.0,"llm_calls":,"prompt_tokens":,'
    b'"completion_tokens":}},"budget_exceeded":null,"claimed_success":true,'
    b'"checked_subgoals":,"checkable_subgoals":},"status":"succeeded"}]'
    b'"label":"trial ","reason":"d_max reached (depth  of )","error":"'
    b'{"plan":{"raw":"","steps":["],"warnings":[],"expression":{"op":"and","kind":"op",'
    b'"children":[{"kind":"step","index":1},{"kind":"step","index":2},{"kind":"step",'
    b'"index":3}]},"expression_text":"(Step 1 AND Step 2)"},"logic":"or",'
    b'["c",{"id":,"goal":"","kind":"group","depth":2,"position":1,"parent_id":1,'
    b'"logic":"and"}],'
    b'"claim":false,"verdict":"unknown","evidence":"","termination":"failed",'
    b'"self_assessed":false,"executor_success":false,'
    b'{"status":"skipped","success":false,"reason":"skipped: ",'
    b'"reward":1.0,"verdict":"confirmed","termination":"reward","claim":true,'
    b'"self_assessed":true,"executor_success":true,'
    b'["u",{"status":"failed","success":false,"context_out":"'
    b'["u",{"status":"succeeded","success":true,"context_out":"'
    b'["u",{"status":"running","context_in":"'
    b'"evidence":"","steps_count":,"termination":"verified","executor_success":true,'
    b'[["l",],["s",[,]],["u",{"usage":{"cost_usd":0.0,"llm_calls":,"prompt_tokens":,'
    b'"completion_tokens":},"reward":0.0,'
)
_DICTIONARIES = {1: _V1}
VERSION = 1
_WBITS = -15  # raw deflate (no zlib header: the version byte says how to read it)


def pack(value: Any) -> bytes:
    """``value`` (JSON-ready) as stored bytes; NUL and lone surrogates become U+FFFD, as in
    every JSON column."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, _WBITS, 8, zlib.Z_DEFAULT_STRATEGY,
                               _DICTIONARIES[VERSION])
    try:
        text = orjson.dumps(value)
    except TypeError:  # a lone surrogate
        text = orjson.dumps(storable(value))
    if b"\\u0000" in text:  # as every JSON column stores it (``adapt.store.text``)
        text = orjson.dumps(storable(value))
    return bytes((VERSION,)) + deflate.compress(text) + deflate.flush()


def unpack(data: bytes) -> Any:
    """The value :func:`pack` stored."""
    dictionary = _DICTIONARIES.get(data[0])
    if dictionary is None:
        raise ValueError(f"packed value of an unknown version {data[0]}")
    inflate = zlib.decompressobj(_WBITS, dictionary)
    return orjson.loads(inflate.decompress(data[1:]) + inflate.flush())
