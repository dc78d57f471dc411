"""Which URLs the server may send requests to on a user's behalf: the outbound-address policy
that every outbound feature shares (webhooks today; remote environments and tool servers over
HTTP will use it too).

A user chooses the URL, so only public addresses are allowed (:mod:`adapt.net.addresses`:
IPv6 forms that embed an IPv4 address are unwrapped first); loopback, private, link-local,
multicast and reserved addresses (and ``localhost``) are refused unless the operator lists the
network (a CIDR) or the host name in the feature's setting. The check runs twice: on the URL
when it is registered (IP literals and ``localhost``), and on every address the host name
resolves to just before each request, so a public-looking name that resolves into the
server's network is refused as well.

The name is resolved once per request: the request then goes to one of the addresses that were
checked (:func:`pinned`: the address in the URL, the name in the ``Host`` header and, for https,
in TLS's server name and certificate check), never to whatever a second lookup would answer, so
a name whose DNS answer changes between the check and the send (DNS rebinding) cannot reach a
refused address.

A refusal's message is for the user who chose the URL and never says what a name resolved to
(that would let a user map the server's network); ``detail`` says it, for the server log.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from adapt.errors import OutboundRefused as OutboundRefused
from adapt.net.addresses import IPAddress, IPNetwork, classify, parse_ip


def _has_control_or_space(text: str) -> bool:
    return any(ord(ch) <= 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text)


def _host_address(host: str) -> IPAddress | None:
    """``host`` as the address a resolver would read it as: an IP literal, or one of the old
    IPv4 spellings that ``getaddrinfo`` still accepts (``2130706433``, ``0x7f.1``, ``127.1``)."""
    address = parse_ip(host)
    if address is not None or ":" in host:
        return address
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


@dataclass(frozen=True)
class OutboundPolicy:
    #: networks (CIDRs) and host names allowed although they are not public (the operator's)
    allowed: Sequence[str] = ()
    #: what the URL is for, in messages: "webhook URL"
    subject: str = "URL"
    #: the feature, in messages: "webhooks"
    feature: str = "requests"
    #: the operator's setting that lists allowed networks, named in refusals
    setting: str = ""
    #: the page that explains the rules, named in refusals
    docs: str = "docs/security.md"
    _networks: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)
    _names: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        nets: list[IPNetwork] = []
        names: set[str] = set()
        for item in self.allowed:
            try:
                nets.append(ipaddress.ip_network(item.strip(), strict=False))
            except ValueError:
                names.add(item.strip().lower().rstrip("."))
        object.__setattr__(self, "_networks", tuple(nets))
        object.__setattr__(self, "_names", frozenset(names))

    def allows(self, address: IPAddress) -> bool:
        """A public address, or one in a network the operator allowed (an IPv4-mapped IPv6
        address counts as its IPv4 address: a connection to it reaches that address)."""
        c = classify(address)
        if c.public:
            return True
        candidates = [address, c.reaches] if c.via == "IPv4-mapped" else [address]
        return any(a in net for a in candidates for net in self._networks
                   if a.version == net.version)

    def _refusal(self, url: str, why: str, *, detail: str | None = None) -> OutboundRefused:
        allow = (f", unless the operator allows a network in {self.setting} (e.g. "
                 '["10.0.0.0/8"])') if self.setting else ""
        return OutboundRefused(
            f"{self.subject} {url!r} {why}; {self.feature} may go to public addresses "
            f"only{allow} ({self.docs})", detail=detail)

    def check_url(self, url: str) -> str:
        """``url`` if it may be registered (no name resolution); else :class:`OutboundRefused`.
        """
        if _has_control_or_space(url):
            raise self._refusal(url, "holds whitespace or a control character")
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").lower().rstrip(".")
            parts.port  # noqa: B018  (raises ValueError on a bad port)
        except ValueError:
            raise self._refusal(url, "is malformed") from None
        if parts.scheme not in ("http", "https") or not host:
            raise self._refusal(url, "is not an http(s) URL with a host")
        if parts.username is not None or parts.password is not None:
            raise self._refusal(url, "holds credentials")
        if host in self._names:
            return url
        if host == "localhost" or host.endswith(".localhost"):
            raise self._refusal(url, "names this machine")
        address = _host_address(host)
        if address is None:
            return url  # a name: its addresses are checked before each request
        if not self.allows(address):
            raise self._refusal(url, f"is not a public address: {classify(address).describe()}")
        return url

    def check_addresses(self, url: str, addresses: Iterable[str]) -> None:
        """Refuse ``url`` when any address its host resolved to is not allowed (the message
        does not say which; ``detail`` does)."""
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        if host in self._names:
            return
        for a in addresses:
            address = parse_ip(a)
            if address is None or not self.allows(address):
                shown = classify(address).describe() if address is not None else repr(a)
                raise self._refusal(url, "resolves to an address that is not public",
                                    detail=f"{host} resolves to {shown}")

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
            raise OutboundRefused(f"{self.subject} {url!r}: host not found",
                                  detail=str(exc)) from None
        addresses = list(dict.fromkeys(str(i[4][0]) for i in infos))
        if not addresses:
            raise OutboundRefused(f"{self.subject} {url!r}: host not found (no address)")
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
    """``url`` sent to ``address`` (one that :meth:`OutboundPolicy.resolve_and_check`
    returned): the connection goes to that address and no other, with the original name in the
    ``Host`` header and, for https, as TLS's server name, so the certificate is checked against
    the name and not the address."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    ip = ipaddress.ip_address(address.split("%")[0])
    literal = f"[{ip}]" if ip.version == 6 else str(ip)
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if parts.port is None else f"{shown}:{parts.port}"
    return Pinned(url=parts._replace(netloc=netloc).geturl(), host_header=host_header,
                  server_name=host if parts.scheme == "https" else None)


__all__ = ["OutboundPolicy", "OutboundRefused", "Pinned", "pinned"]
