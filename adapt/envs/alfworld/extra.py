"""The optional extra ALFWorld needs, and the error that says how to install it."""

from __future__ import annotations

from importlib.util import find_spec

#: the command that installs the extra (Fast Downward compiles from source, a few minutes)
INSTALL_HINT = ('PATH="$VIRTUAL_ENV/bin:$PATH" pip install -e ".[alfworld]" (alfworld==0.4.2 and '
                "textworld[pddl]; Fast Downward's build runs `python`, so the virtualenv's must "
                "come first on PATH)")
#: top-level modules of the extra: alfworld, textworld, Fast Downward (textworld[pddl]), TatSu
MODULES = ("alfworld", "textworld", "fast_downward", "tatsu")


class MissingExtra(ImportError):
    """``alfworld`` / ``textworld[pddl]`` is not installed; the message says how to fix it."""

    #: the registry says so only when the environment is asked for, not on every command
    optional_extra = True

    def __init__(self, missing: str) -> None:
        super().__init__(
            f"the ALFWorld environment needs the optional extra 'alfworld' (not installed: "
            f"{missing}): {INSTALL_HINT}"
        )


def missing_modules() -> list[str]:
    """The extra's top-level modules that cannot be found (cheap: nothing is imported)."""
    return [name for name in MODULES if find_spec(name) is None]


def require() -> None:
    """Raise :class:`MissingExtra` unless the extra is installed."""
    missing = missing_modules()
    if missing:
        raise MissingExtra(", ".join(missing))
