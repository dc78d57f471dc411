"""The environment variables of a process adapt starts for a task: built from nothing.

A worker's own environment holds the operator's secrets (``ADAPT_METRICS_TOKEN``, endpoint keys,
database URLs, the SQL admin password). A child process started with the default ``env=None``
inherits all of it, and so does every process it starts in turn; clearing the environment further
down the chain is not enough, since Linux shows each process's *initial* environment in
``/proc/PID/environ`` for as long as it lives (bubblewrap's ``--clearenv`` cleans only the command
it starts, not bubblewrap itself, which stays PID 1 of the sandbox).

So every process started for a task or on a user's behalf (the Bash sandbox and its launchers,
and later tool and environment servers) gets :func:`minimal_environment` as its ``env=``: a fixed
``PATH``, a locale, ``HOME`` when the caller names one, and only the extra variables the caller
passes on purpose. Nothing is read from ``os.environ``.
"""

from __future__ import annotations

from collections.abc import Mapping

#: the folders a started process finds programs in (the system's; never the worker's ``PATH``)
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: the locale of a started process (UTF-8 without translations; present on every Debian system)
DEFAULT_LANG = "C.UTF-8"


def minimal_environment(
    *,
    home: str | None = None,
    path: str = SYSTEM_PATH,
    lang: str | None = DEFAULT_LANG,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of a process adapt starts: ``PATH``, ``LANG`` (``None``: unset),
    ``HOME`` (``None``: unset) and ``extra``, which the caller chooses variable by variable.

    Raises :class:`ValueError` for a name or value that cannot be an environment variable
    (empty name, ``=`` in a name, NUL anywhere)."""
    env = {"PATH": path}
    if lang is not None:
        env["LANG"] = lang
    if home is not None:
        env["HOME"] = home
    if extra:
        env.update(extra)
    for name, value in env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"not an environment variable: {name!r}")
    return env
