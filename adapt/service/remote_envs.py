"""The operator's remote environments (``ADAPT_REMOTE_ENVIRONMENTS``) in this process.

:func:`register` puts them in the environment registry (every process that runs or accepts
tasks does, at start-up: the API, the workers, ``adapt run``); a URL the outbound address
policy refuses stops the start with the reason. :func:`prefetch` reads their servers' metadata
ahead, off the event loop. :func:`ready` is the API's check before a submission: the class of
a remote environment is made (in a thread) or the submission is refused with a 503 that names
the environment.
"""

from __future__ import annotations

import functools
import logging

from adapt.envs import registry
from adapt.envs.base import in_env_thread
from adapt.envs.remote.catalog import install, remote_policy, settings_specs
from adapt.envs.remote.catalog import prefetch as prefetch_metadata
from adapt.envs.remote.transport import CallLimits
from adapt.errors import EnvironmentUnavailable, RemoteEnvironmentError
from adapt.service.errors import EnvironmentNotAvailable
from adapt.settings import Settings

log = logging.getLogger(__name__)


def register(settings: Settings) -> list[str]:
    """Register the remote environments of ``settings`` (replacing those registered before);
    returns their names. ``OutboundRefused`` (a ``UserError``) for a refused URL."""
    install(settings_specs(dict(settings.remote_environments)),
            remote_policy(settings.remote_environment_allowed_networks),
            CallLimits(timeout=settings.remote_environment_timeout_seconds,
                       retry_seconds=settings.remote_environment_retry_seconds))
    names = sorted(settings.remote_environments)
    if names:
        log.info("remote environments: %s", ", ".join(names))
    return names


async def prefetch() -> list[str]:
    """Read the metadata of the registered servers (in a thread); the names that did not
    answer."""
    if not registry.remote_entries():
        return []
    return await in_env_thread(prefetch_metadata)


async def ready(name: str) -> None:
    """Make the class of ``name`` if it is a remote environment (one try, in a thread);
    ``EnvironmentNotAvailable`` when its server does not answer."""
    entry = registry.remote_entries().get(name)
    if entry is None or entry.loaded() is not None:
        return
    try:
        await in_env_thread(functools.partial(entry.load, wait=False))
    except (EnvironmentUnavailable, RemoteEnvironmentError) as exc:
        raise EnvironmentNotAvailable(name, str(exc)) from None


__all__ = ["prefetch", "ready", "register"]
