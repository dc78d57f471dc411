"""Without the ``alfworld`` extra, importing the ALFWorld package (or its engine) raises
``MissingExtra``, which says how to install it, and the registry leaves the environment out. The
extra's modules are hidden from a subprocess, so this runs with or without it installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

HIDE = ("import sys\n"
        "for name in ('alfworld', 'textworld', 'fast_downward', 'tatsu'):\n"
        "    sys.modules[name] = None  # not installed\n")


@pytest.mark.parametrize("module", ["adapt.envs.alfworld", "adapt.envs.alfworld.engine"])
def test_importing_without_the_extra_says_how_to_install_it(module: str) -> None:
    code = HIDE + (f"try:\n    import {module}\n"
                   "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("MissingExtra "), out
    assert "pip install" in out


def test_the_registry_leaves_alfworld_out_without_the_extra() -> None:
    code = HIDE + ("from adapt.envs import registry\n"
                   "print('alfworld' in registry.available())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
