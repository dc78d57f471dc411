"""A process's open-files limit is raised to the sockets it may hold at once (a model call
in flight each, its database connections), so that a worker of many tasks does not fail its
calls with "Too many open files" where the soft limit is 1,024."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = """
import json, resource, sys
from adapt.service.context import ServiceContext
from adapt.settings import Settings

resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2])))
ServiceContext.create(Settings.model_validate({
    "ADAPT_DATABASE_URL": "sqlite+aiosqlite:///" + sys.argv[3], "concurrency": 3000,
    "db_pool_size": 10}))
print(json.dumps(resource.getrlimit(resource.RLIMIT_NOFILE)))
"""


def _limits_after(soft: int, hard: int, tmp_path: object) -> list[int]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(soft), str(hard),
                          f"{tmp_path}/a.db"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.getcwd()}, check=True)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_process_of_3000_tasks_raises_its_soft_limit(tmp_path: object) -> None:
    # 3,000 model connections, 20 database ones, 512 spare
    assert _limits_after(1024, 8192, tmp_path) == [3532, 8192]


def test_the_hard_limit_bounds_it(tmp_path: object) -> None:
    assert _limits_after(1024, 2048, tmp_path) == [2048, 2048]


def test_a_higher_soft_limit_is_left_alone(tmp_path: object) -> None:
    assert _limits_after(5000, 8192, tmp_path) == [5000, 8192]
