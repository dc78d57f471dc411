"""adapt's webhook signatures checked by the Standard Webhooks reference library
(``standardwebhooks`` on PyPI), and the library's signatures by adapt's own check: the two
implementations agree on the scheme, the secret's format and the timestamp tolerance."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from adapt.webhooks.signing import TOLERANCE_SECONDS, new_secret, sign, verify

BODY = b'{"type":"task.finished","data":{"id":"abc","status":"succeeded","reward":1.0}}'


def test_the_reference_library_verifies_what_adapt_signs() -> None:
    secret = new_secret()
    headers = sign(secret, "msg_2b9d", BODY)
    payload = Webhook(secret).verify(BODY, headers)
    assert payload["data"]["status"] == "succeeded"


def test_adapt_verifies_what_the_reference_library_signs() -> None:
    secret = new_secret()
    now = datetime.now(tz=UTC)
    signature = Webhook(secret).sign("msg_2b9d", now, BODY.decode())
    headers = {"webhook-id": "msg_2b9d", "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": signature}
    assert verify(secret, headers, BODY)
    assert sign(secret, "msg_2b9d", BODY, timestamp=int(now.timestamp()))[
        "webhook-signature"] == signature


def test_both_refuse_a_changed_body_another_secret_and_a_stale_timestamp() -> None:
    secret = new_secret()
    headers = sign(secret, "msg_1", BODY)
    for other_secret, body, hdrs in [
        (secret, BODY + b" ", headers),
        (new_secret(), BODY, headers),
        (secret, BODY, sign(secret, "msg_1", BODY,
                            timestamp=int(time.time()) - TOLERANCE_SECONDS - 60)),
    ]:
        assert not verify(other_secret, hdrs, body)
        with pytest.raises(WebhookVerificationError):
            Webhook(other_secret).verify(body, hdrs)
