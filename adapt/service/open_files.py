"""A process's limit of open files, raised to what it will hold at once: a socket per model
call in flight (``Settings.model_connections``) and per database connection, besides its
own files. Many systems start a process with a soft limit of 1,024 and a hard one far above;
a worker of 1,000 tasks would otherwise fail calls with "Too many open files"."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

#: files a process holds besides its model and database connections (its modules, logs, the
#: broker, environments' sandboxes and MCP servers' pipes)
SPARE = 512


def ensure_open_files(sockets: int) -> int:
    """Raise the soft limit of open files to ``sockets`` + :data:`SPARE` when it is lower, up
    to the hard limit (logged when even that is lower); returns the soft limit now (-1: the
    platform has none)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = sockets + SPARE
    if soft == resource.RLIM_INFINITY or soft >= want:
        return int(soft)
    new = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if new > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        log.info("open files limit raised from %d to %d (%d sockets at once)", soft, new,
                 sockets)
    if new < want:
        log.warning("open files limit %d (hard) is below the %d this process may hold at "
                    "once (%d model and database connections): calls beyond it fail; raise "
                    "the hard limit (ulimit -Hn) or lower ADAPT_CONCURRENCY or "
                    "ADAPT_LLM_MAX_CONNECTIONS", new, want, sockets)
    return int(new)
