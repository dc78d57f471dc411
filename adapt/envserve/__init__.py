"""``adapt env serve``: an installed environment (built-in or plug-in) served over adapt's
environment protocol, so it can run in its own process, virtualenv or host and be registered
with a worker as a remote environment (docs/remote-environments.md).

:func:`create_app` is the server (FastAPI, in :mod:`adapt.envserve.app`), its sessions are in
:mod:`adapt.envserve.sessions`; :func:`serve` runs it with uvicorn.
"""

from __future__ import annotations

import logging

from adapt.envserve.app import create_app, openapi_document

log = logging.getLogger(__name__)


def serve(name: str, *, host: str, port: int, token: str | None, idle_seconds: float,
          max_sessions: int, log_level: str = "warning") -> None:
    """Serve the installed environment ``name`` on ``host:port`` until stopped."""
    import uvicorn

    from adapt.envs import registry

    env_class = registry.get(name)
    app = create_app(env_class, token=token, idle_seconds=idle_seconds,
                     max_sessions=max_sessions)
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)


__all__ = ["create_app", "openapi_document", "serve"]
