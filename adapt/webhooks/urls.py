"""Which URLs webhooks may be sent to: the outbound-address policy of model endpoints
(docs/security.md) applied to webhook URLs.

A webhook goes to the user's own server, so public addresses are allowed; loopback, private,
link-local, multicast and reserved addresses (and ``localhost``) are refused unless the
operator lists them in ``ADAPT_WEBHOOK_ALLOWED_NETWORKS`` (CIDRs such as ``127.0.0.1/32`` or
host names). The check runs twice: on the URL when it is registered (IP literals and
``localhost``), and on every address the host name resolves to just before each delivery, so a
public-looking name that resolves into the server's network is refused as well.

The name is resolved once per attempt: the request then goes to one of the addresses that were
checked (:func:`pinned`: the address in the URL, the name in the ``Host`` header and, for https,
in TLS's server name and certificate check), never to whatever a second lookup would answer, so
a name whose DNS answer changes between the check and the send (DNS rebinding) cannot reach a
refused address.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from adapt.errors import WebhookUrlRefused as WebhookUrlRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


@dataclass(frozen=True)
class WebhookPolicy:
    #: networks and host names allowed even though they are not public (operator's choice)
    allowed: Sequence[str] = ()

    def _networks(self) -> list[IPNetwork]:
        nets: list[IPNetwork] = []
        for item in self.allowed:
            try:
                nets.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                continue
        return nets

    def _names(self) -> set[str]:
        names: set[str] = set()
        for item in self.allowed:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                names.add(item.strip().lower().rstrip("."))
        return names

    def _address_allowed(self, address: IPAddress) -> bool:
        return _public(address) or any(address in net for net in self._networks())

    def _refusal(self, url: str, why: str) -> WebhookUrlRefused:
        return WebhookUrlRefused(
            f"webhook URL {url!r} {why}; webhooks may go to public addresses only, unless the "
            "operator allows a network in ADAPT_WEBHOOK_ALLOWED_NETWORKS (e.g. "
            '["10.0.0.0/8"]) (docs/webhooks.md)')

    def check_url(self, url: str) -> str:
        """``url`` if it may be registered (no name resolution); else :class:`WebhookUrlRefused`.
        """
        try:
            parts = urlsplit(url.strip())
            host = (parts.hostname or "").lower().rstrip(".")
            parts.port  # noqa: B018  (raises ValueError on a bad port)
        except ValueError:
            raise self._refusal(url, "is malformed") from None
        if parts.scheme not in ("http", "https") or not host:
            raise self._refusal(url, "is not an http(s) URL with a host")
        if parts.username or parts.password:
            raise self._refusal(url, "holds credentials")
        if host in self._names():
            return url.strip()
        if host == "localhost" or host.endswith(".localhost"):
            raise self._refusal(url, "names this machine")
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return url.strip()  # a name: its addresses are checked before each delivery
        if not self._address_allowed(address):
            raise self._refusal(url, "is not a public address")
        return url.strip()

    def check_addresses(self, url: str, addresses: Iterable[str]) -> None:
        """Refuse ``url`` when any address its host resolved to is not allowed."""
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        if host in self._names():
            return
        for a in addresses:
            if not self._address_allowed(ipaddress.ip_address(a.split("%")[0])):
                raise self._refusal(url, f"resolves to {a}, which is not a public address")

    def resolve_and_check(self, url: str) -> list[str]:
        """Resolve ``url``'s host (blocking: call from a thread), check every address and
        return them (in the resolver's order, each once): send to these, see :func:`pinned`."""
        self.check_url(url)
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            infos = socket.getaddrinfo(host.strip("[]"), parts.port or 443,
                                       type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise WebhookUrlRefused(f"webhook URL {url!r}: host not found ({exc})") from None
        addresses = list(dict.fromkeys(str(i[4][0]) for i in infos))
        if not addresses:
            raise WebhookUrlRefused(f"webhook URL {url!r}: host not found (no address)")
        self.check_addresses(url, addresses)
        return addresses


@dataclass(frozen=True)
class Pinned:
    """A request to ``url``'s host sent to one checked address."""

    #: the URL with the address in place of the host name
    url: str
    #: the ``Host`` header: the original host (and port, when the URL has one)
    host_header: str
    #: the name TLS sends (SNI) and checks the certificate against (https only)
    server_name: str | None


def pinned(url: str, address: str) -> Pinned:
    """``url`` sent to ``address`` (one that :meth:`WebhookPolicy.resolve_and_check` returned):
    the connection goes to that address and no other, with the original name in the ``Host``
    header and, for https, as TLS's server name, so the certificate is checked against the
    name and not the address."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    ip = ipaddress.ip_address(address.split("%")[0])
    literal = f"[{ip}]" if ip.version == 6 else str(ip)
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if parts.port is None else f"{shown}:{parts.port}"
    return Pinned(url=parts._replace(netloc=netloc).geturl(), host_header=host_header,
                  server_name=host if parts.scheme == "https" else None)
