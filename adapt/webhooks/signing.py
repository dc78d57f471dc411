"""The Standard Webhooks signature (https://www.standardwebhooks.com/, scheme ``v1``).

A secret is ``whsec_`` followed by the base64 of 32 random bytes; those bytes are the HMAC key.
A delivery carries three headers: ``webhook-id`` (the message id, the same on every retry of
one event: receivers deduplicate by it), ``webhook-timestamp`` (Unix seconds of this attempt)
and ``webhook-signature``: ``v1,`` + base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time

PREFIX = "whsec_"
#: receivers refuse a timestamp further than this from their clock (the spec's advice)
TOLERANCE_SECONDS = 300


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def _key(secret: str) -> bytes:
    if secret.startswith(PREFIX):
        return base64.b64decode(secret[len(PREFIX):])
    return secret.encode("utf-8")


def signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value for one delivery."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def sign(secret: str, msg_id: str, body: bytes, *, timestamp: int | None = None
         ) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body``."""
    ts = int(time.time()) if timestamp is None else timestamp
    return {"webhook-id": msg_id, "webhook-timestamp": str(ts),
            "webhook-signature": signature(secret, msg_id, ts, body)}


def verify(secret: str, headers: dict[str, str], body: bytes, *, now: float | None = None,
           tolerance: float = TOLERANCE_SECONDS) -> bool:
    """What a receiver does: True when one of the ``v1`` signatures matches and the timestamp
    is within ``tolerance`` seconds of ``now``. ``headers``: lower-case names."""
    try:
        msg_id = headers["webhook-id"]
        ts = int(headers["webhook-timestamp"])
        given = headers["webhook-signature"].split()
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - ts) > tolerance:
        return False
    expected = signature(secret, msg_id, ts, body)
    return any(hmac.compare_digest(expected, s) for s in given)
