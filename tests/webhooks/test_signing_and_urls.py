"""The Standard Webhooks signature and the outbound-address policy for webhook URLs."""

from __future__ import annotations

import base64

import pytest

from adapt.webhooks import OutboundRefused, new_secret, sign, verify, webhook_policy
from adapt.webhooks.signing import signature


def test_the_specs_example_signature() -> None:
    """The example of the Standard Webhooks reference libraries."""
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    assert signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                     b'{"test": 2432232314}') == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_sign_and_verify() -> None:
    secret = new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    body = b'{"type":"task.finished"}'
    headers = sign(secret, "msg_1", body, timestamp=1_700_000_000)
    assert headers["webhook-id"] == "msg_1" and headers["webhook-timestamp"] == "1700000000"
    assert verify(secret, headers, body, now=1_700_000_010)
    assert not verify(secret, headers, body, now=1_700_000_000 + 301), "too old"
    assert not verify(secret, headers, body + b"x", now=1_700_000_010)
    assert not verify(new_secret(), headers, body, now=1_700_000_010)
    rotated = {**headers, "webhook-signature": "v1,bm9wZQ== " + headers["webhook-signature"]}
    assert verify(secret, rotated, body, now=1_700_000_010), "any one signature may match"
    assert not verify(secret, {k: v for k, v in headers.items() if k != "webhook-id"}, body)


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/hook", "http://localhost/hook", "http://api.localhost/x",
    "http://10.1.2.3/hook", "http://192.168.0.7/hook", "http://172.16.0.1/x",
    "http://169.254.169.254/latest/meta-data", "http://[::1]/hook", "http://[fd00::1]/x",
    "http://[::ffff:127.0.0.1]/x", "http://0.0.0.0/x", "ftp://example.com/x", "example.com",
    "http://user:pw@example.com/x", "http://example.com:99999/x",
])
def test_loopback_private_and_malformed_urls_are_refused_by_default(url: str) -> None:
    with pytest.raises(OutboundRefused, match="ADAPT_WEBHOOK_ALLOWED_NETWORKS"):
        webhook_policy().check_url(url)


def test_public_addresses_and_names_pass_registration() -> None:
    policy = webhook_policy()
    assert policy.check_url("https://hooks.example.com/adapt") == "https://hooks.example.com/adapt"
    assert policy.check_url("http://93.184.216.34/x")


def test_the_operator_may_allow_networks_and_names() -> None:
    policy = webhook_policy(("127.0.0.1/32", "10.0.0.0/8", "hooks.internal"))
    assert policy.check_url("http://127.0.0.1:9000/x")
    assert policy.check_url("http://10.9.8.7/x")
    assert policy.check_url("http://hooks.internal/x")
    with pytest.raises(OutboundRefused):
        policy.check_url("http://127.0.0.2/x")
    with pytest.raises(OutboundRefused):
        policy.check_url("http://192.168.1.1/x")


def test_a_name_that_resolves_to_a_private_address_is_refused_before_sending() -> None:
    """The refusal the tenant sees does not say what the name resolved to (that would map the
    server's network); ``detail``, for the server log, does."""
    with pytest.raises(OutboundRefused, match="resolves to an address that is not public") as e:
        webhook_policy().check_addresses("https://evil.example/x", ["93.184.216.34", "10.0.0.5"])
    assert "10.0.0.5" not in str(e.value)
    assert e.value.detail == "evil.example resolves to 10.0.0.5 (private)"
    webhook_policy().check_addresses("https://ok.example/x", ["93.184.216.34"])
    webhook_policy(("10.0.0.0/8",)).check_addresses("https://in.example/x", ["10.0.0.5"])
    with pytest.raises(OutboundRefused) as e:
        webhook_policy().check_addresses("http://a.example/", ["127.0.0.1"])
    assert "127.0.0.1" not in str(e.value) and "127.0.0.1 (loopback)" in (e.value.detail or "")


def test_a_pinned_request_goes_to_the_checked_address_under_the_original_name() -> None:
    from adapt.net.policy import pinned

    p = pinned("https://Hooks.Example.com/adapt?x=1", "93.184.216.34")
    assert p.url == "https://93.184.216.34/adapt?x=1"
    assert p.host_header == "hooks.example.com" and p.server_name == "hooks.example.com"
    p = pinned("http://hooks.example.com:8080/a", "2606:2800:220:1::1")
    assert p.url == "http://[2606:2800:220:1::1]:8080/a"
    assert p.host_header == "hooks.example.com:8080" and p.server_name is None
