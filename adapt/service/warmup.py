"""Warm a worker process up before it takes tasks.

A process's first task used to do, on the worker's event loop, everything that is built
lazily once per process: importing the model client (``openai``, ``httpx``), loading the
plug-in registries from entry points, building the plan-expression parser and the model
clients' SSL context (:func:`adapt.llm.transport.ssl_context`), reading prompt
templates and the decoding monitor's specs, loading TextCraft's recipe book. That held the loop
(and with it the heartbeat that renews every lease of the process) for one to two seconds on
the project's 2-core machine: longer than a short lease, so another worker could take over a
task that was running fine and pay its calls again. :func:`preload` does that work once, before
the worker announces itself, off any event loop.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
import time

log = logging.getLogger(__name__)

#: modules a task imports on first use (the model clients, the environments' packages)
MODULES = (
    "openai",
    "httpx",
    "adapt.llm.openai_compat.models",
    "adapt.service.model_factory",
    "adapt.envs.textcraft",
)


async def _tiny_task() -> None:
    from adapt.engine import MemorySink, RunConfig, run_task
    from adapt.envs.textcraft import TextCraft
    from adapt.llm.spec import load_model

    model = load_model("sim:textcraft?capability=1")
    await run_task(TextCraft(), {"seed": 1}, RunConfig(d_max=2), model, sink=MemorySink())


def preload() -> float:
    """Import the lazily imported modules, load the registries and run one tiny simulated task
    in memory (nothing is stored or sent anywhere), in a thread of its own so that it never
    runs on a caller's event loop; returns the seconds it took."""
    start = time.perf_counter()
    for name in MODULES:
        importlib.import_module(name)
    from adapt.engine.executors.registry import available_executors
    from adapt.engine.planning.logic import parse
    from adapt.engine.strategies.registry import available_strategies
    from adapt.envs import registry as environments
    from adapt.llm.transport import ssl_context

    ssl_context()  # the model clients' TLS context (the CA bundle is read once)
    available_executors()
    available_strategies()
    environments.available()  # (remote environments too: their servers' metadata)
    parse("(Step 1 AND Step 2)")
    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(_tiny_task())
        except Exception as exc:  # a warm-up must never stop a worker from starting
            failure.append(exc)

    thread = threading.Thread(target=run, name="adapt-warmup")
    thread.start()
    thread.join()
    if failure:
        log.warning("warm-up task failed (the first real task will do its set-up): %r",
                    failure[0])
    took = time.perf_counter() - start
    log.info("worker warmed up in %.2f s", took)
    return took
