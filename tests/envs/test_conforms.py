"""``conforms`` answers as ``isinstance`` does against every runtime-checkable protocol of the
environment contract, for every kind of object: the engine's checks on the hot path use it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from adapt.engine.claim_checks import Verifiable
from adapt.envs import base, registry
from adapt.envs.base import conforms

PROTOCOLS = [obj for obj in vars(base).values()
             if isinstance(obj, type) and getattr(obj, "_is_runtime_protocol", False)]


class Nominal(base.BlockingSteps, base.RollsBack):  # subclasses without the members
    pass


class MethodsSetToNone:
    astep = None
    rolls_back = None
    checkpoint = None
    rollback = None


class Blocking:
    blocking_steps: ClassVar[bool] = True


class Registered:
    pass


base.FinalAction.register(Registered)  # type: ignore[attr-defined]


def _instance_attributes() -> Any:
    obj = type("Plain", (), {})()
    obj.blocking_steps = False
    obj.final_action = "submit"
    obj.astep = lambda action: None
    return obj


OBJECTS = [Nominal(), MethodsSetToNone(), Blocking(), Registered(), _instance_attributes(),
           object(), 3, "text", None]


@pytest.fixture(scope="module")
def envs() -> Iterator[list[Any]]:
    made = [registry.create(name) for name in ("textcraft", "calculator")]
    yield made
    for env in made:
        env.close()


def test_conforms_is_isinstance(envs: list[Any]) -> None:
    assert len(PROTOCOLS) > 10
    checked = 0
    for proto in [*PROTOCOLS, Verifiable]:
        for obj in [*envs, *OBJECTS]:
            assert conforms(obj, proto) == isinstance(obj, proto), (proto, obj)
            checked += conforms(obj, proto)
    assert checked > 10  # some answers were yes


def test_the_engine_sees_a_blocking_environment(envs: list[Any]) -> None:
    assert base.blocks(Blocking()) and not base.blocks(envs[0])
    assert base.final_action(_instance_attributes()) == "submit"
