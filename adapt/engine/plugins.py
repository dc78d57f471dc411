"""A named registry of engine plug-ins (executors, strategies): explicit, lazily loaded.

Three sources, in this order of precedence: objects registered in-process with ``register``,
the built-ins (``name -> "module:attribute"``, imported on first use), and the entry points of
installed packages in the registry's group (``[project.entry-points."adapt.executors"]``).
Nothing registers itself as a side effect of being imported. A target that fails to import is
an error of the one name that needs it, raised when that name is used (never hidden).
"""

from __future__ import annotations

import importlib
import threading
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from adapt.errors import UserError

T = TypeVar("T")


def load_target(target: str) -> object:
    """The object named by ``"package.module:attribute.path"``."""
    module_name, _, attribute = target.partition(":")
    obj: object = importlib.import_module(module_name.strip())
    for part in attribute.strip().split(".") if attribute.strip() else []:
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    def __init__(self, what: str, builtins: dict[str, str], group: str, *,
                 sort: bool = True) -> None:
        self.what = what  # "executor kind", "strategy": how messages name an entry
        self.builtins = dict(builtins)
        self.group = group
        self.sort = sort  # names sorted, else the built-ins first in their order
        self._registered: dict[str, T] = {}
        self._loaded: dict[str, T] = {}
        self._declared: dict[str, str] | None = None
        self._lock = threading.RLock()

    def register(self, name: str, obj: T) -> None:
        """Add (or replace) ``name`` in this process."""
        with self._lock:
            self._registered[name] = obj

    def unregister(self, name: str) -> None:
        with self._lock:
            self._registered.pop(name, None)

    def refresh(self) -> None:
        """Read the installed packages' entry points again (e.g. after installing one)."""
        with self._lock:
            self._declared = None
            self._loaded.clear()

    def _entry_points(self) -> dict[str, str]:
        with self._lock:
            if self._declared is None:
                self._declared = {ep.name: ep.value for ep in entry_points(group=self.group)}
            return self._declared

    def names(self) -> list[str]:
        extra = sorted({*self._registered, *self._entry_points()} - set(self.builtins))
        return sorted([*self.builtins, *extra]) if self.sort else [*self.builtins, *extra]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def get(self, name: str) -> T:
        with self._lock:
            if name in self._registered:
                return self._registered[name]
            if name in self._loaded:
                return self._loaded[name]
            target = self.builtins.get(name) or self._entry_points().get(name)
            if target is None:
                raise UserError(f"unknown {self.what} {name!r}; available: "
                                f"{', '.join(self.names())}")
            try:
                obj = load_target(target)
            except (ImportError, AttributeError) as exc:
                raise UserError(f"{self.what} {name!r} ({target}) cannot be loaded: "
                                f"{type(exc).__name__}: {exc}") from exc
            self._loaded[name] = obj  # type: ignore[assignment]
            return obj  # type: ignore[return-value]
