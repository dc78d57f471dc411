"""Signed webhooks: the Standard Webhooks signature (``signing``) and the outbound-address
policy as webhooks apply it (:func:`webhook_policy`, over :mod:`adapt.net.policy`). Storage is
in ``adapt.store.webhooks``; the sink that records deliveries and the loop that sends them are
in ``adapt.service.webhooks``."""

from collections.abc import Sequence

from adapt.net.policy import OutboundPolicy, OutboundRefused
from adapt.webhooks.signing import new_secret, sign, verify

WEBHOOK_EVENTS = ("task.finished", "node.finished")


def webhook_policy(allowed: Sequence[str] = ()) -> OutboundPolicy:
    """The outbound-address policy for webhook URLs; ``allowed``: the operator's
    ``ADAPT_WEBHOOK_ALLOWED_NETWORKS``."""
    return OutboundPolicy(tuple(allowed), subject="webhook URL", feature="webhooks",
                          setting="ADAPT_WEBHOOK_ALLOWED_NETWORKS", docs="docs/webhooks.md")


__all__ = ["WEBHOOK_EVENTS", "OutboundRefused", "new_secret", "sign", "verify",
           "webhook_policy"]
