"""InterCode-Bash's data and file systems for tests, prepared once per session (fixtures: the
environment's tests and the Bash bench's import them into their ``conftest.py``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapt.envs.intercode_bash import InterCodeBash
from adapt.envs.intercode_bash.layers import Layers, prepare

#: the data next to the repository (``../shared``), or where ``ADAPT_TEST_BASH_DATA`` says (a git
#: worktree elsewhere); not ``ADAPT_BASH_DATA_DIR``, which the environment itself reads
DATA = Path(os.environ.get("ADAPT_TEST_BASH_DATA") or
            Path(__file__).resolve().parents[2].parent / "shared" / "data" / "intercode-bash")


def _skip_reason() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install -y bubblewrap; .ci/run does)"
    if os.geteuid() != 0:
        return "the sandbox mounts overlay file systems: run the tests as root"
    if not DATA.is_dir():
        return f"no InterCode-Bash data at {DATA}"
    return None


@pytest.fixture(scope="session")
def bash_data() -> Path:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    return DATA


@pytest.fixture(scope="session")
def bash_cache(bash_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bash-cache")


@pytest.fixture(scope="session")
def bash_layers(bash_data: Path, bash_cache: Path) -> dict[int, Layers]:
    return prepare(bash_data, bash_cache)


@pytest.fixture
def bash_env(bash_data: Path, bash_cache: Path, bash_layers: dict[int, Layers]
             ) -> Iterator[InterCodeBash]:
    env = InterCodeBash(data_dir=bash_data, cache_dir=bash_cache, timeout=10)
    yield env
    env.close()
