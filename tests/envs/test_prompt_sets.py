"""Prompt sets (config ``prompts``: ``small``, ``paper``): each environment declares the kinds a
set has, the declaration matches the package's files, and a declared file that is missing (an
installation without its package data) is an error, not a silent fall-back to the default."""

from __future__ import annotations

from importlib import resources

import pytest

from adapt.envs.textcraft import TextCraft


def files_of_sets(package: str) -> dict[str, frozenset[str]]:
    prompts = resources.files(package).joinpath("prompts")
    return {d.name: frozenset(f.name.removesuffix(".txt") for f in d.iterdir()
                              if f.name.endswith(".txt"))
            for d in prompts.iterdir() if d.is_dir() and not d.name.startswith("__")}


def test_textcraft_declares_the_kinds_its_prompt_sets_have() -> None:
    assert TextCraft.prompt_sets == files_of_sets("adapt.envs.textcraft")


def test_alfworld_declares_the_kinds_its_prompt_sets_have() -> None:
    alfworld = pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError,
                                   reason="needs the alfworld extra")
    assert alfworld.ALFWorld.prompt_sets == files_of_sets("adapt.envs.alfworld")


class WithoutPaperFiles(TextCraft):
    """TextCraft as installed without its ``prompts/paper/`` files: its prompt package is one
    that has default prompts but no paper set."""

    prompt_package = "adapt.envs.calculator"


def test_a_missing_paper_prompt_is_an_error_not_the_default() -> None:
    env = WithoutPaperFiles()
    env.reset(seed=1, prompts="paper")
    with pytest.raises(FileNotFoundError, match=r"prompts/paper/planner\.txt"):
        env.prompt_template("planner")
    # a kind the paper set does not have keeps the default, as documented
    assert env.prompt_template("spec_examples") == WithoutPaperFiles().prompt_template(
        "spec_examples")


def test_the_paper_set_is_used_where_it_has_the_kind() -> None:
    env = TextCraft()
    env.reset(seed=1, prompts="paper")
    assert env.prompt_template("planner") != TextCraft().prompt_template("planner")
    assert env.prompt_template("stateact") == TextCraft().prompt_template("stateact")
