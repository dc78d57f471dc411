"""A worker process warms up before it takes tasks, so its first task does not hold the event
loop (and the heartbeat that renews the process's leases) with one-time set-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import workers.loop
from adapt.service import warmup

CHECK = """
import sys
from pathlib import Path
from adapt.service.warmup import preload
from adapt.engine.planning import logic
assert "openai" not in sys.modules and logic._parser.cache_info().currsize == 0
preload()
assert "openai" in sys.modules and "adapt.llm.openai_compat.models" in sys.modules
assert logic._parser.cache_info().currsize == 1  # the plan parser is built
from adapt.envs.textcraft import book
assert book.load_book.cache_info().currsize >= 1  # the recipe book is read
print("warm")
"""


def test_preload_does_the_first_tasks_set_up_in_a_fresh_process() -> None:
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "warm"


def test_the_worker_runtime_warms_up_before_it_is_created() -> None:
    assert workers.loop.preload is warmup.preload
    source = Path(workers.loop.__file__).read_text()
    body = source[source.index("def get_runtime"):]
    assert body.index("preload()") < body.index("WorkerRuntime(")
