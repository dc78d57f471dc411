"""Fixtures of the bench tests: the SQL and Bash benches use their environments' ones."""

from tests.envs.intercode_bash.conftest import bash_cache, bash_data, bash_layers  # noqa: F401
from tests.sqldb import data_dir, server  # noqa: F401
