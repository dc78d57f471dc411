"""Optional environment capabilities are declared protocols (``adapt/envs/base.py``): a plain
class that has the members has the capability, without subclassing ``BaseEnvironment``; a
class without them gets the neutral default."""

from __future__ import annotations

from typing import Any, ClassVar

from adapt.envs.base import (
    BaseEnvironment,
    DecodingGrammars,
    FinalAction,
    RollsBack,
    SuccessReward,
    decoding_grammar,
    final_action,
    paper_profile,
    success_reward,
    undoable,
)
from adapt.envs.textcraft import TextCraft


class Plain:
    """No capabilities at all."""


class Capable:
    final_action: ClassVar[str | None] = "submit"
    success_reward: ClassVar[float | None] = 1
    paper_profile: ClassVar[dict[str, Any]] = {"executor": {"max_steps": 7}}

    def __init__(self, undo: bool) -> None:
        self.undo = undo
        self.state = 0

    def rolls_back(self) -> bool:
        return self.undo

    def checkpoint(self) -> object:
        return self.state

    def rollback(self, mark: object) -> None:
        self.state = int(mark)  # type: ignore[call-overload]

    def decoding_grammar(self, kind: str) -> str | None:
        return 'root ::= "inventory"' if kind == "action" else None


def test_a_plain_class_has_the_capabilities_it_declares() -> None:
    env = Capable(undo=True)
    assert isinstance(env, RollsBack | FinalAction | SuccessReward | DecodingGrammars)
    assert undoable(env) is env and undoable(Capable(undo=False)) is None
    assert final_action(env) == "submit"
    assert success_reward(env) == 1.0 and isinstance(success_reward(env), float)
    assert decoding_grammar(env, "action") == 'root ::= "inventory"'
    assert decoding_grammar(env, "plan") is None
    assert paper_profile(Capable) == {"executor": {"max_steps": 7}}  # read from the class too


def test_without_them_the_defaults_hold() -> None:
    for env in (Plain(), BaseEnvironment()):
        assert undoable(env) is None
        assert final_action(env) is None and success_reward(env) is None
        assert decoding_grammar(env, "action") is None and paper_profile(env) == {}


def test_the_shipped_environments_declare_theirs() -> None:
    env = TextCraft()
    assert success_reward(env) == 1.0 and isinstance(env, DecodingGrammars)
    assert undoable(env) is None  # TextCraft keeps what a failed sub-task made
