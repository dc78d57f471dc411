"""Fixtures of the InterCode-Bash tests: the file systems, prepared once per session (defined in
tests/support/bash_data.py, shared with the Bash bench)."""

from tests.support.bash_data import bash_cache, bash_data, bash_env, bash_layers  # noqa: F401
