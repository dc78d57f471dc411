"""The outbound address classification and policy (adapt.net): IPv6 forms that embed an IPv4
address are unwrapped and judged by the address they reach; reserved ranges are refused."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapt.llm.guard import is_loopback_host
from adapt.net import AddressKind, OutboundPolicy, OutboundRefused, classify
from adapt.webhooks import webhook_policy

#: (address, the kind of address a request to it reaches, the IPv4 address it embeds)
TABLE = [
    # IPv4-mapped (a dual-stack socket connects to the IPv4 address itself)
    ("::ffff:127.0.0.1", AddressKind.LOOPBACK, "127.0.0.1"),
    ("::ffff:a9fe:a9fe", AddressKind.LINK_LOCAL, "169.254.169.254"),
    ("::ffff:10.0.0.1", AddressKind.PRIVATE, "10.0.0.1"),
    # NAT64 (well-known prefix) and SIIT
    ("64:ff9b::a9fe:a9fe", AddressKind.LINK_LOCAL, "169.254.169.254"),
    ("64:ff9b::7f00:1", AddressKind.LOOPBACK, "127.0.0.1"),
    ("64:ff9b::c0a8:1", AddressKind.PRIVATE, "192.168.0.1"),
    ("::ffff:0:7f00:1", AddressKind.LOOPBACK, "127.0.0.1"),
    # 6to4
    ("2002:a9fe:a9fe::1", AddressKind.LINK_LOCAL, "169.254.169.254"),
    ("2002:7f00:1::", AddressKind.LOOPBACK, "127.0.0.1"),
    ("2002:0a00:0001::1", AddressKind.PRIVATE, "10.0.0.1"),
    # IPv4-compatible (deprecated)
    ("::7f00:1", AddressKind.LOOPBACK, "127.0.0.1"),
    ("::a9fe:a9fe", AddressKind.LINK_LOCAL, "169.254.169.254"),
    ("::5db8:d822", AddressKind.RESERVED, "93.184.216.34"),
    # Teredo: the client's address is stored inverted
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", AddressKind.LOOPBACK, "127.0.0.1"),
    ("2001:0:4136:e378:8000:63bf:a2e9:2dcb", AddressKind.RESERVED, "93.22.210.52"),
]

REFUSED = [
    # site-local (deprecated), unique-local, link-local, multicast, unspecified, loopback
    "fec0::1", "fd00::1", "fe80::1", "ff02::1", "::", "::1",
    # reserved and documentation IPv6
    "100::1", "2001:db8::1", "3fff::1", "2001:2::1", "64:ff9b:1::a9fe:a9fe", "4000::1",
    # IPv4 special ranges
    "0.0.0.0", "10.1.2.3", "100.64.0.1", "127.0.0.2", "169.254.169.254", "172.16.5.4",
    "192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.51.100.7",
    "203.0.113.9", "224.0.0.1", "240.0.0.1", "255.255.255.255",
]

PUBLIC = ["93.184.216.34", "1.1.1.1", "8.8.8.8", "2606:2800:220:1::1", "2a00:1450:4001::1",
          "64:ff9b::5db8:d822", "2002:5db8:d822::1", "::ffff:93.184.216.34"]


@pytest.mark.parametrize(("address", "kind", "reaches"), TABLE)
def test_ipv6_forms_that_embed_ipv4_are_unwrapped(address: str, kind: AddressKind,
                                                   reaches: str) -> None:
    c = classify(address)
    assert (c.kind, str(c.reaches)) == (kind, reaches), c.describe()
    assert not c.public
    with pytest.raises(OutboundRefused, match="is not a public address"):
        webhook_policy().check_url(f"http://[{address}]/hook")


@pytest.mark.parametrize("address", REFUSED)
def test_reserved_and_non_public_addresses_are_refused(address: str) -> None:
    assert not classify(address).public, classify(address).describe()
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(OutboundRefused):
        webhook_policy().check_url(f"https://{host}/hook")
    with pytest.raises(OutboundRefused):
        webhook_policy().check_addresses("https://name.example/hook", [address])


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert classify(address).public, classify(address).describe()
    host = f"[{address}]" if ":" in address else address
    webhook_policy().check_url(f"https://{host}/hook")
    webhook_policy().check_addresses("https://name.example/hook", [address])


@given(st.ip_addresses(v=4))
def test_every_ipv4_address_is_judged_the_same_in_every_ipv6_wrapping(
        v4: ipaddress.IPv4Address) -> None:
    """Mapped, NAT64, SIIT and 6to4 forms reach the IPv4 address: never more public than it
    (the deprecated IPv4-compatible form and Teredo are never public)."""
    n = int(v4)
    plain = classify(v4)
    for wrapped in (ipaddress.IPv6Address((0xFFFF << 32) | n),
                    ipaddress.IPv6Address((0x64FF9B << 96) | n),
                    ipaddress.IPv6Address((0xFFFF << 48) | n),
                    ipaddress.IPv6Address((0x2002 << 112) | (n << 80) | 1)):
        c = classify(wrapped)
        assert c.reaches == v4 and c.kind == plain.kind, (str(wrapped), c.describe())
    if n > 1:
        assert not classify(ipaddress.IPv6Address(n)).public
    teredo = ipaddress.IPv6Address((0x20010000 << 96) | (~n & 0xFFFFFFFF))
    assert classify(teredo).reaches == v4 and not classify(teredo).public


@given(st.ip_addresses(v=6))
def test_only_global_unicast_ipv6_can_be_public(v6: ipaddress.IPv6Address) -> None:
    c = classify(v6)
    if c.public and c.via is None:
        assert v6 in ipaddress.ip_network("2000::/3")
        assert v6 not in ipaddress.ip_network("2001::/23")
        assert v6 not in ipaddress.ip_network("2001:db8::/32")


@pytest.mark.parametrize("url", [
    "http://2130706433/x", "http://0x7f.1/x", "http://127.1/x", "http://017700000001/x",
])
def test_old_ipv4_spellings_are_read_as_the_resolver_reads_them(url: str) -> None:
    with pytest.raises(OutboundRefused, match=r"127\.0\.0\.1 \(loopback\)"):
        webhook_policy().check_url(url)


@pytest.mark.parametrize("url", [
    "http://exa\nmple.com/x", "http://example.com/a b", "http://example.com/\t",
    " http://example.com/x", "http://example.com/x\x7f", "http://example.com/\x85",
])
def test_whitespace_and_control_characters_are_refused(url: str) -> None:
    with pytest.raises(OutboundRefused, match="whitespace or a control character"):
        webhook_policy().check_url(url)


def test_an_allowed_ipv4_network_also_allows_its_ipv4_mapped_form_only() -> None:
    policy = OutboundPolicy(("127.0.0.1/32",), subject="URL", setting="X_ALLOWED")
    policy.check_url("http://127.0.0.1:9/x")
    policy.check_url("http://[::ffff:127.0.0.1]:9/x")
    for other in ("64:ff9b::7f00:1", "2002:7f00:1::", "::7f00:1"):
        with pytest.raises(OutboundRefused, match="X_ALLOWED"):
            policy.check_url(f"http://[{other}]:9/x")


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("::1", True), ("[::ffff:127.0.0.1]", True), ("localhost", True),
    ("64:ff9b::7f00:1", False), ("2002:7f00:1::", False), ("::7f00:1", False),
    ("fec0::1", False), ("10.0.0.1", False),
])
def test_the_model_guard_uses_the_same_classification(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback
