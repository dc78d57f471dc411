"""``serve(settings, host, port)``: what ``adapt serve`` runs.

Refuses to expose an unauthenticated API: binding a non-loopback address while no API key
was ever created needs ``ADAPT_ALLOW_PUBLIC_WITHOUT_KEYS=1``, and ``ADAPT_AUTH_MODE=off`` is
refused there outright. In a container the address judged is the one the port is published
on (``ADAPT_PUBLISHED_HOST``), not the bind address. Runs one uvicorn process; in embedded mode
the tasks run in that process's event loop. The server closes connections that do not send
complete request headers in time (``ADAPT_HTTP_HEADER_TIMEOUT_SECONDS``, ``api.protocol``) or
stay idle after a response (``ADAPT_HTTP_KEEPALIVE_SECONDS``), and the app answers the bind
address as a ``Host`` (``api.edge``).
"""

from __future__ import annotations

import asyncio
import logging
import socket

from adapt.errors import UserError
from adapt.llm.guard import is_loopback_host
from adapt.service import auth
from adapt.settings import Settings, get_settings
from adapt.store import migrate
from adapt.store.db import create_engine, session_factory
from api.protocol import protocol_class

log = logging.getLogger(__name__)


async def _any_keys(settings: Settings) -> bool:
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            return await auth.auth_required(session)
    finally:
        await engine.dispose()


def check_exposure(settings: Settings, host: str, has_keys: bool) -> None:
    """Raise ``UserError`` for a public bind without keys; warn loudly for an open local one.

    ``has_keys``: a key was ever created (authentication is then required in mode auto). In a
    container (bind address 0.0.0.0), the address judged is the one the port is published on,
    ``ADAPT_PUBLISHED_HOST``, when it is set."""
    host = settings.published_host or host
    if settings.auth_mode == "off":
        if not is_loopback_host(host):
            raise UserError(
                f"refusing to listen on {host} with ADAPT_AUTH_MODE=off: anyone who can reach "
                "this address could run tasks. Authentication can only be switched off on a "
                "loopback address (127.0.0.1)"
            )
        log.warning("WARNING: ADAPT_AUTH_MODE=off: the API on %s is OPEN to anyone on this "
                    "machine", host)
        return
    if has_keys or settings.auth_mode == "keys":
        return
    if not is_loopback_host(host):
        if not settings.allow_public_without_keys:
            raise UserError(
                f"refusing to listen on {host}: no API keys exist, so anyone who can reach "
                "this address could run tasks (and spend LLM credit). Create a key first with "
                "`adapt keys create --tenant NAME`, or listen on 127.0.0.1, or set "
                "ADAPT_ALLOW_PUBLIC_WITHOUT_KEYS=1 to allow it anyway"
            )
        log.warning("WARNING: listening on %s with NO API KEYS: anyone who can reach it can "
                    "use this API (ADAPT_ALLOW_PUBLIC_WITHOUT_KEYS=1)", host)
        return
    log.warning("WARNING: no API keys exist; the API on %s is OPEN: anyone on this machine "
                "can use it. Create a key with `adapt keys create --tenant NAME` to require "
                "authentication", host)


def serve(settings: Settings | None = None, host: str | None = None,
          port: int | None = None) -> None:
    """Prepare the database, check the exposure rules and run uvicorn (blocks)."""
    import uvicorn

    from api.main import create_app

    settings = settings or get_settings()
    bind_host = host or settings.host
    bind_port = port or settings.port
    url = settings.database_url
    if settings.embedded:
        migrate.upgrade(url)
    else:
        migrate.check_serving(url)
    check_exposure(settings, bind_host, asyncio.run(_any_keys(settings)))
    sock = bind_socket(bind_host, bind_port)  # before anything says the API is ready
    # the app knows the address it serves (a Host it answers), also when --host overrides it
    settings = settings.model_copy(update={"host": bind_host, "port": bind_port})
    app = create_app(settings)
    app.state.serve_url = serve_url(settings, bind_host, bind_port)
    config = uvicorn.Config(app, host=bind_host, port=bind_port, proxy_headers=False,
                            timeout_graceful_shutdown=10,
                            timeout_keep_alive=settings.http_keepalive_seconds,
                            http=protocol_class(settings.http_header_timeout_seconds))
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def serve_url(settings: Settings, host: str, port: int) -> str:
    """The address users open: the published host in a container, loopback for a bind on
    every interface, else the bind address."""
    name = (settings.published_host or host).strip("[]")
    if name in ("", "0.0.0.0"):
        name = "127.0.0.1"
    elif name == "::":
        name = "::1"
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening-ready socket bound to ``host:port``; ``UserError`` when it cannot be."""
    name = host.strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((name, port))
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; is another "
                        "server using that port? Choose another with --port "
                        "(ADAPT_PORT)") from None
    sock.set_inheritable(True)
    return sock
