"""Where an IP address leads: one classification for every outbound feature.

An IPv6 address may carry an IPv4 address inside it, and a request to it ends at that IPv4
address (or at a gateway that forwards to it): IPv4-mapped ``::ffff:a.b.c.d`` (a dual-stack
socket connects to the IPv4 address itself), the deprecated IPv4-compatible ``::a.b.c.d``,
NAT64 ``64:ff9b::a.b.c.d`` and the SIIT form ``::ffff:0:a.b.c.d``, 6to4 ``2002:AABB:CCDD::``
and Teredo ``2001:0::/32``. :func:`classify` unwraps those forms and classifies the address
the request really reaches, so ``64:ff9b::a9fe:a9fe`` is the cloud metadata address
169.254.169.254 (link-local), not a public IPv6 address.

The ranges come from IANA's IPv4 and IPv6 special-purpose address registries, written out here
rather than taken from :mod:`ipaddress`'s ``is_global`` (which calls ``fec0::1`` and ``::7f00:1``
global, and has changed between Python releases). Only ``2000::/3`` (global unicast) minus its
special blocks, and IPv4 outside every special block, is public.

No name is resolved here and nothing here opens a connection (see :mod:`adapt.net.policy`).
"""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class AddressKind(enum.StrEnum):
    PUBLIC = "public"
    LOOPBACK = "loopback"
    #: RFC 1918, shared address space (carrier-grade NAT), unique-local and site-local IPv6
    PRIVATE = "private"
    #: 169.254.0.0/16 (cloud metadata services live there) and fe80::/10
    LINK_LOCAL = "link-local"
    MULTICAST = "multicast"
    #: 0.0.0.0/8 and ``::``: connecting to it reaches this machine on most systems
    UNSPECIFIED = "unspecified"
    #: documentation, benchmarking, protocol assignments, deprecated forms, unassigned space
    RESERVED = "reserved"


def _nets(kind: AddressKind, *cidrs: str) -> list[tuple[IPNetwork, AddressKind]]:
    return [(ipaddress.ip_network(c), kind) for c in cidrs]


_IPV4: list[tuple[IPNetwork, AddressKind]] = [
    *_nets(AddressKind.UNSPECIFIED, "0.0.0.0/8"),
    *_nets(AddressKind.LOOPBACK, "127.0.0.0/8"),
    *_nets(AddressKind.PRIVATE, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
           "100.64.0.0/10"),
    *_nets(AddressKind.LINK_LOCAL, "169.254.0.0/16"),
    *_nets(AddressKind.MULTICAST, "224.0.0.0/4"),
    *_nets(AddressKind.RESERVED,
           "192.0.0.0/24",      # IETF protocol assignments
           "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",  # documentation
           "192.88.99.0/24",    # 6to4 relay anycast (deprecated)
           "198.18.0.0/15",     # benchmarking
           "240.0.0.0/4"),      # reserved, and the limited broadcast address
]

_IPV6: list[tuple[IPNetwork, AddressKind]] = [
    *_nets(AddressKind.UNSPECIFIED, "::/128"),
    *_nets(AddressKind.LOOPBACK, "::1/128"),
    *_nets(AddressKind.PRIVATE, "fc00::/7", "fec0::/10"),  # unique-local; site-local (old)
    *_nets(AddressKind.LINK_LOCAL, "fe80::/10"),
    *_nets(AddressKind.MULTICAST, "ff00::/8"),
    *_nets(AddressKind.RESERVED,
           "64:ff9b:1::/48",    # local-use NAT64 (where the IPv4 address sits varies)
           "100::/64",          # discard-only
           "2001::/23",         # IETF protocol assignments (Teredo is handled before)
           "2001:db8::/32", "3fff::/20",  # documentation
           "5f00::/16"),        # segment routing identifiers
]

_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")

#: the IPv6 forms that embed an IPv4 address, and the bits that hold it
_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")


@dataclass(frozen=True)
class Classified:
    """An address, the address a request to it reaches, and what kind of address that is."""

    address: IPAddress
    #: the IPv4 address ``address`` embeds, or ``address`` itself
    reaches: IPAddress
    kind: AddressKind
    #: how ``address`` embeds ``reaches`` (``"NAT64"``, ``"6to4"``...), or None
    via: str | None = None

    @property
    def public(self) -> bool:
        return self.kind is AddressKind.PUBLIC

    def describe(self) -> str:
        """``'127.0.0.1 (loopback)'``, ``'64:ff9b::a9fe:a9fe (NAT64 of 169.254.169.254,
        link-local)'``."""
        if self.via is None:
            return f"{self.address} ({self.kind})"
        return f"{self.address} ({self.via} of {self.reaches}, {self.kind})"


def parse_ip(host: str) -> IPAddress | None:
    """``host`` as an IP address (brackets and an IPv6 zone id dropped), or None for a name."""
    text = host.strip().strip("[]").split("%")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _table_kind(address: IPAddress) -> AddressKind | None:
    table = _IPV4 if address.version == 4 else _IPV6
    for net, kind in table:
        if address in net:
            return kind
    return None


def _ipv4_kind(address: ipaddress.IPv4Address) -> AddressKind:
    return _table_kind(address) or AddressKind.PUBLIC


def _embedded(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _MAPPED:
        return "IPv4-mapped", low32
    if address in _TRANSLATED:
        return "IPv4-translated", low32
    if address in _NAT64:
        return "NAT64", low32
    if address in _SIX_TO_FOUR:
        return "6to4", ipaddress.IPv4Address((int(address) >> 80) & 0xFFFFFFFF)
    if address in _TEREDO:
        return "Teredo", ipaddress.IPv4Address(~int(address) & 0xFFFFFFFF)  # the client's
    if address in _COMPATIBLE and int(address) > 1:
        return "IPv4-compatible", low32
    return None


def classify(address: str | IPAddress) -> Classified:
    """Classify ``address`` (an IP literal; :class:`ValueError` for anything else)."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv4Address):
        return Classified(ip, ip, _ipv4_kind(ip))
    embedded = _embedded(ip)
    if embedded is not None:
        via, inner = embedded
        kind = _ipv4_kind(inner)
        if via in ("Teredo", "IPv4-compatible") and kind is AddressKind.PUBLIC:
            kind = AddressKind.RESERVED  # deprecated or tunnelled forms: never a destination
        return Classified(ip, inner, kind, via)
    listed = _table_kind(ip)
    if listed is None:
        listed = AddressKind.PUBLIC if ip in _GLOBAL_UNICAST else AddressKind.RESERVED
    return Classified(ip, ip, listed)


def is_loopback_address(address: str | IPAddress) -> bool:
    """True when a connection to ``address`` stays on this machine: 127.0.0.0/8, ``::1`` and
    their IPv4-mapped form (not NAT64 or 6to4 forms: those go through a gateway)."""
    c = classify(address)
    return c.kind is AddressKind.LOOPBACK and c.via in (None, "IPv4-mapped")


__all__ = ["AddressKind", "Classified", "IPAddress", "IPNetwork", "classify",
           "is_loopback_address", "parse_ip"]
