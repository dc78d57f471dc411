"""Files and folders of the prepared layers, written whole or not at all (several processes may
prepare at once; ``layers.prepare`` serializes them with a lock, these make each step atomic)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (never half a file)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def building(target: Path) -> Iterator[Path]:
    """A fresh, uniquely named folder to build ``target`` in (next to it, same file system);
    when the block succeeds it replaces ``target`` by a rename, else it is removed."""
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield work / target.name
        old = work / "old"
        if target.exists() or target.is_symlink():
            os.rename(target, old)
        os.rename(work / target.name, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
