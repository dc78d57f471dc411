"""Outbound network rules shared by every feature that sends requests where a user points it:
what an address really is (``addresses``: IPv6 forms that embed IPv4 unwrapped, reserved
ranges) and which URLs may be sent to (``policy``: the operator's allow-list, the check before
each request, requests pinned to the checked address). Pure: no web, database or queue
imports."""

from adapt.net.addresses import AddressKind, Classified, classify, is_loopback_address, parse_ip
from adapt.net.policy import OutboundPolicy, OutboundRefused, Pinned, pinned

__all__ = ["AddressKind", "Classified", "OutboundPolicy", "OutboundRefused", "Pinned",
           "classify", "is_loopback_address", "parse_ip", "pinned"]
