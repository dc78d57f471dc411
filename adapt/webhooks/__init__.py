"""Signed webhooks: the Standard Webhooks signature (``signing``) and the outbound-address
policy for webhook URLs (``urls``). Storage is in ``adapt.store.webhooks``; the sink that
records deliveries and the loop that sends them are in ``adapt.service.webhooks``."""

from adapt.webhooks.signing import new_secret, sign, verify
from adapt.webhooks.urls import WebhookPolicy, WebhookUrlRefused

WEBHOOK_EVENTS = ("task.finished", "node.finished")

__all__ = ["WEBHOOK_EVENTS", "WebhookPolicy", "WebhookUrlRefused", "new_secret", "sign",
           "verify"]
