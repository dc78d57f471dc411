"""The cyclic garbage collector of a long-lived service process (a worker, the API server).

Python's defaults suit short scripts: a young-generation collection every 700 net allocations,
and full collections that walk every object the process holds, modules and settings included.
In a process that runs hundreds of tasks, or renders trees of thousands of nodes, that cost
about 7 % of a worker's CPU per LLM call, and the API server paused 130 ms in every fourth
``GET /tasks/{id}/tree`` of a 5,000-node task for a full collection that found nothing.
:func:`tune_gc` is called once per process after its start-up: what exists then is left out of
every later collection (``gc.freeze``), and young objects are collected every
:data:`GC_THRESHOLD` allocations instead.
"""

from __future__ import annotations

import gc
import os

#: the cyclic garbage collector's first threshold in a service process (Python's default: 700)
GC_THRESHOLD = 50_000

_tuned: int | None = None  # the pid whose collector was tuned


def tune_gc() -> None:
    """Tune this process's collector (once per process; again in a forked child)."""
    global _tuned
    if _tuned == os.getpid():
        return
    _tuned = os.getpid()
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, second, third)
