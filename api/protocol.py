"""uvicorn's HTTP protocol with a deadline on request headers.

uvicorn closes a connection that stays idle after a response (``timeout_keep_alive``), but
nothing else: a client that connects and sends nothing, or sends its headers a byte at a time
(slowloris), holds the connection for as long as it likes, and any byte it sends cancels the
keep-alive timer. Here a connection must complete each request's headers within
``header_timeout`` seconds, counted from the connection's start for the first request and from
the first byte of each following one; past it, the connection is closed. A request whose
headers are complete is not limited (a long event stream is fine); its body has its own
deadline (``BodyLimitMiddleware``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)


def _uvicorn_protocol() -> type[asyncio.Protocol]:
    """The class uvicorn's ``http="auto"`` would use: httptools' parser, else h11."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools is not installed
        from uvicorn.protocols.http.h11_impl import H11Protocol
        return H11Protocol
    return HttpToolsProtocol


class HeaderDeadline(asyncio.Protocol):
    """Mixed in before one of uvicorn's HTTP protocol classes (which provide ``cycle``,
    ``transport`` and ``loop``): see :func:`protocol_class`."""

    header_timeout: float = 5.0
    cycle: Any
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    _header_timer: asyncio.TimerHandle | None = None

    def _awaiting_headers(self) -> bool:
        """No request in progress: the connection is idle or reading a request's headers."""
        return self.cycle is None or bool(self.cycle.response_complete)

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expired(self) -> None:
        self._header_timer = None
        if self._awaiting_headers() and not self.transport.is_closing():
            log.debug("closing a connection that sent no complete request headers in %.1f s",
                      self.header_timeout)
            self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._awaiting_headers():
            self._arm()  # the first byte of a request (a no-op while the deadline runs)
        super().data_received(data)
        if not self._awaiting_headers():
            self._disarm()  # headers complete: a request is being handled

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def protocol_class(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class with :class:`HeaderDeadline` (pass it as ``http=``)."""
    base = _uvicorn_protocol()
    return type("HeaderDeadlineProtocol", (HeaderDeadline, base),
                {"header_timeout": header_timeout})
