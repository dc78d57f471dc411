"""The HTTP edge: which ``Host`` names the API answers, and which state-changing requests a
browser may not send.

- **DNS rebinding.** A page on ``http://attacker.test:8000`` whose name the attacker later points
  at 127.0.0.1 talks to a local server as its own origin; only the ``Host`` header still names
  the attacker. The API answers localhost, loopback addresses, the bind and published
  addresses, the address a connection arrived at and the names in ``ADAPT_ALLOWED_HOSTS``; any
  other name is a 421.
- **Cross-site requests.** A POST, PUT, PATCH or DELETE whose ``Origin`` is neither the
  request's own ``Host`` nor a configured name is a 403, and so is one that a browser marks
  ``Sec-Fetch-Site: cross-site`` without an ``Origin``. The content types an HTML form (or a
  ``fetch`` without a CORS preflight) can send are a 415 on those methods, even where the
  operation reads no body: the API takes JSON only.

Requests without an ``Origin`` (curl, SDKs, other servers) pass the cross-site checks: they are
not made by a browser on someone else's behalf.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from api.middleware import send_problem
from api.problems import problem_body

#: the methods that change state; GET and HEAD only read (and browsers cannot read a
#: cross-origin answer without CORS, which the API does not offer)
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: what a form or a preflight-free ``fetch`` can send
FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data",
                        "text/plain"})
#: names that always mean this machine (the resolver never asks DNS for them)
LOCAL_NAMES = frozenset({"localhost"})
ANY_HOST = "*"
_WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})

_HOST_RE = re.compile(r"^(?:\[(?P<ip6>[0-9a-fA-F:.]+)\]|(?P<name>[A-Za-z0-9._-]+))"
                      r"(?::(?P<port>[0-9]{1,5}))?$")
_ORIGIN_RE = re.compile(r"^(?P<scheme>https?)://(?P<authority>[^/?#@]+)$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a Host header value (lower case, no brackets, no trailing dot);
    ``None`` when it is not a host name or address with an optional port."""
    match = _HOST_RE.match(value.strip())
    if match is None:
        return None
    name = (match["ip6"] or match["name"]).lower().rstrip(".")
    port = int(match["port"]) if match["port"] else None
    if not name or (port is not None and port > 65535):
        return None
    return name, port


def _is_loopback_address(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HostPolicy:
    """The names the API answers to. ``configured``: ``ADAPT_ALLOWED_HOSTS`` (trusted as
    origins too); ``own``: the addresses ``adapt serve`` listens on or is published on."""

    configured: frozenset[str]
    own: frozenset[str] = frozenset()
    any_host: bool = False

    @classmethod
    def build(cls, allowed: Iterable[str], own: Iterable[str | None] = ()) -> HostPolicy:
        names = {n.strip().lower().rstrip(".") for n in allowed if n.strip()}
        addresses = {(a or "").strip().strip("[]").lower() for a in own}
        return cls(configured=frozenset(names - {ANY_HOST}), any_host=ANY_HOST in names,
                   own=frozenset(addresses - _WILDCARD_BINDS))

    def allows_host(self, name: str, local_address: str | None) -> bool:
        """May a request naming ``name`` (from :func:`parse_host`) be answered, when it
        arrived at ``local_address``?"""
        return (self.any_host or name in LOCAL_NAMES or name in self.configured
                or name in self.own or name == local_address or _is_loopback_address(name))

    def trusts_origin(self, origin: str, host: tuple[str, int | None] | None) -> bool:
        """Is ``origin`` (an ``Origin`` header) the request's own host and port, or a
        configured name? ``null`` (sandboxed frames, files) never is. Schemes are not
        compared: behind a TLS proxy the page is https and the request reaches us as http."""
        match = _ORIGIN_RE.match(origin.strip())
        if match is None:
            return False
        parsed = parse_host(match["authority"])
        if parsed is None:
            return False
        name, port = parsed
        if name in self.configured:
            return True
        if host is None:
            return False
        default = _DEFAULT_PORTS[match["scheme"].lower()]
        return name == host[0] and (port or default) == (host[1] or default)


def _header(scope: Scope, wanted: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == wanted:
            return bytes(value).decode("latin-1")
    return None


def _local_address(scope: Scope) -> str | None:
    server = scope.get("server")
    if not server or not isinstance(server[0], str):
        return None
    return server[0].strip("[]").lower()


def _refusal(status: int, detail: str, slug: str, header: str,
             scope: Scope) -> dict[str, Any]:
    return problem_body(status, detail, slug=slug, instance=scope.get("path"),
                        errors=[{"location": "header", "field": header, "message": detail}])


def check_request(policy: HostPolicy, scope: Scope) -> dict[str, Any] | None:
    """The problem body refusing this request, or ``None`` when it may go on."""
    host_header = _header(scope, b"host")
    host = parse_host(host_header) if host_header is not None else None
    if host_header is not None and (
            host is None or not policy.allows_host(host[0], _local_address(scope))):
        return _refusal(
            421, f"this server does not answer for the host {host_header!r}; the operator "
            "lists its public names in ADAPT_ALLOWED_HOSTS (localhost and loopback addresses "
            "always work)", "unknown-host", "Host", scope)
    if scope.get("method") not in UNSAFE_METHODS:
        return None
    origin = _header(scope, b"origin")
    if origin is not None and not policy.trusts_origin(origin, host):
        return _refusal(
            403, f"cross-site request refused: Origin {origin!r} is not this server's; send "
            "it from the server's own pages, or without a browser", "cross-site-request",
            "Origin", scope)
    if origin is None and (_header(scope, b"sec-fetch-site") or "").lower() == "cross-site":
        return _refusal(403, "cross-site request refused (Sec-Fetch-Site: cross-site)",
                        "cross-site-request", "Sec-Fetch-Site", scope)
    content_type = _header(scope, b"content-type")
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    if mime in FORM_TYPES:
        return _refusal(
            415, f"the API takes JSON only: send Content-Type: application/json (got "
            f"{mime}), or no body and no Content-Type", "unsupported-content-type",
            "content-type", scope)
    return None


class EdgeMiddleware:
    """Refuse, before anything reads the body, what :func:`check_request` refuses."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = check_request(self.policy, scope)
            if problem is not None:
                await send_problem(send, int(problem["status"]), problem,
                                   [(b"connection", b"close")])
                return
        await self.app(scope, receive, send)
