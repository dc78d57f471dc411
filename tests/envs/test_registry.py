"""The environment registry: built-ins, entry points, errors, describe() and validate_config()."""

from __future__ import annotations

import logging
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field

import adapt.envs
from adapt.envs import BaseEnvironment, StepResult, registry
from adapt.errors import InvalidConfig, UnknownEnvironment, UserError

FAKE_MODULE = "fake_adapt_env_plugin"
GROUP = registry.ENTRY_POINT_GROUP


class Inner(BaseModel):
    x: int


class ToyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    size: int = Field(default=3, ge=1, le=8, description="how big")
    label: str = "toy"
    inner: Inner | None = None


class Toy(BaseEnvironment):
    name: ClassVar[str] = "toy"
    description: ClassVar[str] = "a toy environment"
    config_model: ClassVar[type[BaseModel]] = ToyConfig
    default_max_steps: ClassVar[int] = 7
    action_grammar: ClassVar[str] = 'start: "noop"'

    def __init__(self, flavour: str = "plain") -> None:
        self.flavour = flavour

    @property
    def goal(self) -> str:
        return "do nothing"

    def reset(self, **config: Any) -> str:
        return "Goal: do nothing."

    def step(self, action: str) -> StepResult:
        return StepResult("Nothing happens.")

    def task_observation(self, goal: str) -> str:
        return f"Goal: {goal}."


class Other(Toy):
    name: ClassVar[str] = "other"
    description: ClassVar[str] = "another toy"


class Misnamed(Toy):
    name: ClassVar[str] = "not-what-the-entry-point-says"


class NoConfigModel:
    """Has every member but config_model is not a pydantic model."""

    name = "half"
    description = ""
    config_model = dict
    default_max_steps = 1
    action_grammar = "x"
    goal = ""

    def reset(self) -> None: ...
    def step(self) -> None: ...
    def salient_state(self) -> None: ...
    def task_observation(self) -> None: ...
    def is_failure(self) -> None: ...
    def prompt_template(self) -> None: ...
    def close(self) -> None: ...


def ep(name: str, attribute: str, module: str = FAKE_MODULE) -> EntryPoint:
    return EntryPoint(name=name, value=f"{module}:{attribute}", group=GROUP)


@pytest.fixture
def fake_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType(FAKE_MODULE)
    module.Toy = Toy  # type: ignore[attr-defined]
    module.Other = Other  # type: ignore[attr-defined]
    module.Misnamed = Misnamed  # type: ignore[attr-defined]
    module.NoConfigModel = NoConfigModel  # type: ignore[attr-defined]
    module.not_a_class = Toy()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, FAKE_MODULE, module)
    return module


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    registry.refresh()
    yield
    registry.refresh()


EntryPointSetter = Callable[..., list[int]]


@pytest.fixture
def entry_points(
    monkeypatch: pytest.MonkeyPatch, fake_module: types.ModuleType
) -> EntryPointSetter:
    """Replace the registry's view: ``entry_points(*eps, builtins={...})``; returns a call log."""

    def install(*eps: EntryPoint, builtins: dict[str, str] | None = None) -> list[int]:
        calls: list[int] = []

        def fake_entry_points(*, group: str) -> list[EntryPoint]:
            assert group == GROUP
            calls.append(1)
            return list(eps)

        monkeypatch.setattr(registry, "entry_points", fake_entry_points)
        monkeypatch.setattr(registry, "BUILTINS", builtins or {})
        registry.refresh()
        return calls

    return install


def test_entry_point_is_discovered_and_created(entry_points: EntryPointSetter) -> None:
    entry_points(ep("toy", "Toy"))
    assert registry.available() == {"toy": Toy}
    assert adapt.envs.get_environment("toy") is Toy
    env = adapt.envs.create("toy", flavour="spicy")
    assert isinstance(env, Toy) and env.flavour == "spicy"


def test_unknown_name_lists_the_available_ones(entry_points: EntryPointSetter) -> None:
    entry_points(ep("toy", "Toy"), ep("other", "Other"))
    with pytest.raises(UnknownEnvironment) as caught:
        registry.get("nope")
    assert caught.value.available == ["other", "toy"]
    assert str(caught.value) == "unknown environment 'nope'; available: other, toy"
    assert isinstance(caught.value, UserError)
    with pytest.raises(UnknownEnvironment, match="available: other, toy"):
        adapt.envs.create("nope")


def test_unknown_name_with_nothing_available(entry_points: EntryPointSetter) -> None:
    entry_points()
    with pytest.raises(UnknownEnvironment, match=r"available: \(none\)"):
        registry.get("toy")


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        (ep("broken", "Toy", module="no_such_module_for_adapt_tests"), "ModuleNotFoundError"),
        (ep("broken", "Missing"), "AttributeError"),
        (ep("broken", "not_a_class"), "not a class"),
        (ep("broken", "NoConfigModel"), "not a pydantic BaseModel"),
    ],
)
def test_a_broken_plugin_is_skipped_with_a_warning(
    entry_points: EntryPointSetter,
    caplog: pytest.LogCaptureFixture,
    broken: EntryPoint,
    reason: str,
) -> None:
    entry_points(ep("toy", "Toy"), broken)
    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        table = registry.available()
    assert table == {"toy": Toy}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "'broken'" in warnings[0] and reason in warnings[0] and broken.value in warnings[0]


def test_a_plugin_raising_at_import_is_skipped(
    entry_points: EntryPointSetter, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    (tmp_path / "exploding_adapt_plugin.py").write_text("raise RuntimeError('kaboom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry_points(ep("boom", "Env", module="exploding_adapt_plugin"), ep("toy", "Toy"))
    assert registry.available() == {"toy": Toy}


def test_a_builtin_that_fails_to_import_is_left_out(
    entry_points: EntryPointSetter, caplog: pytest.LogCaptureFixture
) -> None:
    entry_points(ep("toy", "Toy"), builtins={"gone": "no_such_module_for_adapt_tests:Gone"})
    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        assert registry.available() == {"toy": Toy}
    assert "'gone' (built-in" in caplog.text


def test_builtins_load_lazily_and_dedupe_with_their_entry_point(
    entry_points: EntryPointSetter, caplog: pytest.LogCaptureFixture
) -> None:
    target = f"{FAKE_MODULE}:Toy"
    entry_points(ep("toy", "Toy"), builtins={"toy": target})
    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        assert registry.available() == {"toy": Toy}
    assert caplog.records == []


def test_first_claim_on_a_name_wins(
    entry_points: EntryPointSetter, caplog: pytest.LogCaptureFixture
) -> None:
    entry_points(ep("toy", "Other"), ep("toy", "Toy"), builtins={"toy": f"{FAKE_MODULE}:Toy"})
    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        assert registry.available() == {"toy": Toy}
    assert "ignoring entry point" in caplog.text and "registered that name first" in caplog.text


def test_a_name_mismatch_is_registered_with_a_warning(
    entry_points: EntryPointSetter, caplog: pytest.LogCaptureFixture
) -> None:
    entry_points(ep("misnamed", "Misnamed"))
    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        assert registry.available() == {"misnamed": Misnamed}
    assert "says its name is 'not-what-the-entry-point-says'" in caplog.text


def test_an_unreadable_entry_point_table_gives_the_builtins(
    monkeypatch: pytest.MonkeyPatch, fake_module: types.ModuleType
) -> None:
    def exploding(*, group: str) -> list[EntryPoint]:
        raise OSError("corrupt metadata")

    monkeypatch.setattr(registry, "entry_points", exploding)
    monkeypatch.setattr(registry, "BUILTINS", {"toy": f"{FAKE_MODULE}:Toy"})
    assert registry.available(refresh=True) == {"toy": Toy}


def test_the_table_is_cached_until_refreshed(entry_points: EntryPointSetter) -> None:
    calls = entry_points(ep("toy", "Toy"))
    first = registry.available()
    first["intruder"] = Other
    assert registry.available() == {"toy": Toy}
    registry.get("toy")
    assert len(calls) == 1
    registry.refresh()
    registry.available()
    assert len(calls) == 2
    registry.available(refresh=True)
    assert len(calls) == 3


def test_describe_includes_config_schemas(entry_points: EntryPointSetter) -> None:
    entry_points(ep("toy", "Toy"), ep("other", "Other"))
    infos = adapt.envs.describe()
    assert [info.name for info in infos] == ["other", "toy"]
    toy = infos[1]
    assert toy == registry.environment_info("toy")
    assert toy.description == "a toy environment"
    assert toy.default_max_steps == 7
    assert toy.action_grammar == 'start: "noop"'
    assert toy.config_schema == ToyConfig.model_json_schema()
    assert toy.config_schema["properties"]["size"]["maximum"] == 8
    dumped = toy.model_dump(mode="json")
    assert set(dumped) == {
        "name",
        "description",
        "config_schema",
        "default_max_steps",
        "action_grammar",
    }


def test_validate_config_returns_the_model(entry_points: EntryPointSetter) -> None:
    entry_points(ep("toy", "Toy"))
    config = adapt.envs.validate_config("toy", {"size": 5})
    assert isinstance(config, ToyConfig) and config.size == 5
    assert adapt.envs.validate_config("toy", None) == ToyConfig()


def test_validate_config_lists_every_field_error(entry_points: EntryPointSetter) -> None:
    entry_points(ep("toy", "Toy"))
    with pytest.raises(InvalidConfig) as caught:
        adapt.envs.validate_config(
            "toy", {"size": 99, "label": ["x"], "inner": {"x": "y"}, "colour": "red"}
        )
    message = str(caught.value)
    assert message.startswith("invalid config for environment 'toy' (4 errors): ")
    assert "size: Input should be less than or equal to 8" in message
    assert "label: Input should be a valid string" in message
    assert "inner.x: Input should be a valid integer" in message
    assert "colour: Extra inputs are not permitted" in message
    assert "https://" not in message
    assert isinstance(caught.value, UserError)


def test_validate_config_refuses_a_non_object(entry_points: EntryPointSetter) -> None:
    entry_points(ep("toy", "Toy"))
    with pytest.raises(InvalidConfig, match="expected an object of settings, got list"):
        adapt.envs.validate_config("toy", [1, 2])  # type: ignore[arg-type]
    with pytest.raises(UnknownEnvironment):
        adapt.envs.validate_config("nope", {})


def test_the_real_entry_points_are_read_without_error() -> None:
    table = registry.available()
    assert all(isinstance(cls, type) for cls in table.values())


def test_importing_adapt_envs_is_light() -> None:
    code = (
        "import sys, adapt.envs\n"
        "heavy = {'fastapi', 'sqlalchemy', 'celery', 'redis'}\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in heavy"
        " or m.startswith('adapt.envs.textcraft'))\n"
        "assert not loaded, loaded\n"
        "assert callable(adapt.envs.available) and callable(adapt.envs.get_environment)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
