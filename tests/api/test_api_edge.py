"""api/edge.py's rules as plain functions (issue 27); tests/security/test_http_edge.py checks
them over real HTTP."""

from __future__ import annotations

import pytest

from api.edge import HostPolicy, parse_host


@pytest.mark.parametrize(("value", "parsed"), [
    ("localhost:8000", ("localhost", 8000)), ("LocalHost.", ("localhost", None)),
    ("[::1]:8000", ("::1", 8000)), ("127.0.0.1", ("127.0.0.1", None)),
    ("a b", None), ("", None), ("x:99999", None), ("user@host", None), ("[::1", None),
])
def test_host_values_are_parsed_strictly(value: str, parsed: tuple[str, int | None] | None
                                         ) -> None:
    assert parse_host(value) == parsed


def test_the_published_and_bind_addresses_are_answered_wildcards_are_not_names() -> None:
    policy = HostPolicy.build([], ["0.0.0.0", "192.168.1.5"])
    assert policy.allows_host("192.168.1.5", None)
    assert not policy.allows_host("0.0.0.0", None)
    assert not policy.allows_host("192.168.1.6", None)
    assert policy.allows_host("192.168.1.6", "192.168.1.6")  # where the connection arrived
    assert policy.allows_host("127.8.9.10", None) and policy.allows_host("::1", None)


def test_a_star_answers_every_host_but_trusts_no_foreign_origin() -> None:
    policy = HostPolicy.build(["*", "Adapt.Example.com."])
    assert policy.allows_host("anything.test", None)
    assert policy.trusts_origin("https://adapt.example.com", ("10.0.0.1", 8000))
    assert not policy.trusts_origin("https://anything.test", ("10.0.0.1", 8000))
    assert policy.trusts_origin("http://anything.test", ("anything.test", 80))
    assert not policy.trusts_origin("http://anything.test:81", ("anything.test", None))
    assert not policy.trusts_origin("null", ("anything.test", None))
