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
