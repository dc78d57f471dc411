"""The root of the tests. No test may reach a real LLM provider: the guard is locked off here.

The service fixtures (databases, queues, workers, the simulator's server) are in the plugin
:mod:`tests.support.services`, which imports their clients only when a test uses one; shared
fakes and helpers are in :mod:`tests.support`.
"""

from __future__ import annotations

import os

os.environ["ADAPT_ALLOW_REMOTE_LLM"] = "0"

from adapt.llm import guard

guard.forbid_remote()  # nothing in the test process can re-enable remote LLM endpoints

pytest_plugins = ["tests.support.services"]
