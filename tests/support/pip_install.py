"""Install a plug-in package for real, with pip, into a folder of its own (put the folder on
``sys.path`` or a server's ``PYTHONPATH`` to have it installed there).

Offline (``--no-build-isolation --no-index``) when this environment can build a wheel itself
(the ``wheel`` package, or setuptools >= 70.1); otherwise pip fetches the build backend from
the package index in an isolated build.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest


def can_build_offline() -> bool:
    if importlib.util.find_spec("setuptools") is None:
        return False
    if importlib.util.find_spec("wheel") is not None:
        return True
    major, minor = (int(part) for part in re.findall(r"\d+", metadata.version("setuptools"))[:2])
    return (major, minor) >= (70, 1)  # setuptools builds wheels on its own from 70.1


def pip_install(source: Path, target: Path) -> None:
    """``pip install --target target source`` (no dependencies); fails the test if pip does."""
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-input",
               "--disable-pip-version-check", "--target", str(target)]
    if can_build_offline():
        command += ["--no-build-isolation", "--no-index"]
    command.append(str(source))
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        pytest.fail(f"pip could not install {source.name} ({' '.join(command)}):\n"
                    f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def forget_package(package: str) -> None:
    """Drop ``package`` and its modules from ``sys.modules`` (the next import finds it anew)."""
    for name in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
        del sys.modules[name]


def importable(installed: Path, package: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The plug-in ``package`` installed in ``installed`` importable in this process, as if pip
    had put it in site-packages, with adapt's environment table read again; undone after (a
    fixture's body: ``yield from importable(...)``)."""
    from adapt.envs import registry

    forget_package(package)
    monkeypatch.syspath_prepend(str(installed))
    registry.refresh()
    yield installed
    monkeypatch.undo()
    forget_package(package)
    importlib.invalidate_caches()
    registry.refresh()
