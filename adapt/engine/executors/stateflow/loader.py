"""Load StateFlow machines from YAML: files, built-in names, and the per-environment choice.

``load_machine("intercode_sql")`` reads the package's ``machines/intercode_sql.yaml``;
``load_machine("path/to/machine.yaml")`` reads a file. Every problem is a ``UserError`` whose
message names the file and what is wrong. ``machine_for_env(env)`` picks the machine of an
environment: one registered with ``register_machine(env_name, ...)``, else the built-in machine
named like the environment (``env.name``).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]
from pydantic import ValidationError

from adapt.engine.executors.stateflow.models import Machine
from adapt.envs.base import Environment
from adapt.errors import UserError

_PACKAGE = "adapt.engine.executors.stateflow"
_REGISTERED: dict[str, Machine] = {}


def builtin_machines() -> list[str]:
    folder = resources.files(_PACKAGE).joinpath("machines")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir()
                  if p.name.endswith(".yaml"))


def format_validation_error(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"]) or "machine"
        message = str(err["msg"]).removeprefix("Value error, ")
        lines.append(f"  {where}: {message}")
    return "\n".join(lines)


def parse_machine(text: str, source: str = "<string>") -> Machine:
    """Parse and validate YAML text; errors are ``UserError``s naming ``source``."""
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        raise UserError(f"{source}: invalid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise UserError(f"{source}: a state machine is a YAML mapping (name, initial, states, "
                        f"...), not {type(data).__name__}")
    try:
        return Machine.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{source}: invalid state machine:\n{format_validation_error(exc)}"
                        ) from None


def load_machine(path_or_name: str | Path) -> Machine:
    """A machine from a YAML file, or a built-in one by name (``intercode_sql``, ...)."""
    text = str(path_or_name)
    if isinstance(path_or_name, Path) or text.endswith((".yaml", ".yml")) or "/" in text:
        path = Path(path_or_name)
        try:
            content = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read state machine {text!r}: {exc.strerror}") from None
        return parse_machine(content, str(path))
    return _builtin(text)


@cache
def _builtin(name: str) -> Machine:
    file = resources.files(_PACKAGE).joinpath("machines", f"{name}.yaml")
    if not file.is_file():
        raise UserError(f"no built-in StateFlow machine {name!r}; built-in machines: "
                        f"{', '.join(builtin_machines())}")
    return parse_machine(file.read_text(encoding="utf-8"), f"machines/{name}.yaml")


def register_machine(env_name: str, machine: Machine | str | Path) -> None:
    """Use ``machine`` (or the file/built-in it names) for environment ``env_name``."""
    _REGISTERED[env_name] = machine if isinstance(machine, Machine) else load_machine(machine)


def unregister_machine(env_name: str) -> None:
    _REGISTERED.pop(env_name, None)


def machine_for_env(env: Environment) -> Machine:
    """The machine for ``env``: a registered one, else the built-in ``machines/<env.name>``."""
    if env.name in _REGISTERED:
        return _REGISTERED[env.name]
    if env.name not in builtin_machines():
        raise UserError(
            f"the stateflow executor has no state machine for environment {env.name!r}; "
            f"built-in machines: {', '.join(builtin_machines())}. Add "
            f"adapt/engine/executors/stateflow/machines/{env.name}.yaml or call "
            "adapt.engine.executors.stateflow.register_machine()"
        )
    return _builtin(env.name)
