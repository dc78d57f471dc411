"""The public API is importable from ``adapt``; importing the engine's tree does not load openai."""

from __future__ import annotations

import subprocess
import sys

import adapt


def test_every_public_name_resolves() -> None:
    for name in adapt.__all__:
        assert getattr(adapt, name) is not None, name
    assert adapt.run_task is __import__("adapt.engine", fromlist=["run_task"]).run_task


def test_importing_the_tree_does_not_import_openai() -> None:
    code = "import sys, adapt.engine.tree, adapt.llm; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_all_lists_every_export() -> None:
    assert sorted(adapt.__all__) == sorted(adapt._EXPORTS)
