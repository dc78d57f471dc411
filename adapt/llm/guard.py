"""The real-model guard: no LLM request leaves this machine unless someone allowed it.

Rules, checked before any network traffic:

- Loopback endpoints (``127.0.0.0/8``, ``::1``, ``localhost``) are always allowed: the
  simulator, a llama.cpp / vLLM / Ollama server on this machine.
- Any other endpoint (including the default OpenAI endpoint) is refused with
  :class:`~adapt.errors.RealModelRefused` unless the caller passes ``allow_remote=True``. The
  service and the CLI pass it from their settings (``ADAPT_ALLOW_REMOTE_LLM=1``); the library
  itself never reads the environment, so nothing is allowed by accident.
- :func:`forbid_remote` is a process-wide kill switch that wins over ``allow_remote=True`` and
  cannot be undone. The test suite's ``conftest.py`` calls it at start-up, so no test can reach
  a paid API whatever it passes.

Host names are not resolved: only the literal name ``localhost`` (and ``*.localhost``) and
loopback IP literals count as local.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from adapt.errors import RealModelRefused
from adapt.net.addresses import is_loopback_address, parse_ip

logger = logging.getLogger(__name__)

ALLOW_ENV_VAR = "ADAPT_ALLOW_REMOTE_LLM"

_remote_forbidden = False


def forbid_remote() -> None:
    """Refuse every non-loopback endpoint for the rest of this process (irreversible)."""
    global _remote_forbidden
    if not _remote_forbidden:
        logger.info("remote LLM endpoints are now forbidden in this process")
    _remote_forbidden = True


def remote_forbidden() -> bool:
    """True once :func:`forbid_remote` has been called."""
    return _remote_forbidden


def is_loopback(base_url: str) -> bool:
    """True when ``base_url`` points at this machine (loopback IP literal or ``localhost``)."""
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        return False
    if not host:
        return False
    return is_loopback_host(host)


def is_loopback_host(host: str) -> bool:
    """``localhost``, ``*.localhost``, 127.0.0.0/8, ``::1`` (also IPv4-mapped; not the NAT64 or
    6to4 forms, which leave the machine): the classification every outbound feature shares
    (:mod:`adapt.net.addresses`). Names are never resolved."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    address = parse_ip(name)
    return address is not None and is_loopback_address(address)


def refusal_reason(
    base_url: str, *, allow_remote: bool, forbidden: bool, model: str = ""
) -> str | None:
    """Why a request to ``base_url`` must be refused, or None when it may go ahead.

    Pure: the process-wide state is passed in as ``forbidden``; see :func:`check_endpoint`.
    """
    if is_loopback(base_url):
        return None
    what = f"model {model!r} at {base_url}" if model else base_url
    if forbidden:
        return (
            f"refusing to call {what}: remote LLM endpoints are forbidden in this process "
            "(adapt.llm.guard.forbid_remote() was called, e.g. by the test suite); use a "
            "loopback endpoint (http://127.0.0.1:PORT/v1) or a sim: model instead"
        )
    if allow_remote:
        return None
    return (
        f"refusing to call {what}: it is not a loopback endpoint and real models cost money. "
        f"To allow it set {ALLOW_ENV_VAR}=1 (service / CLI), or pass allow_remote=True "
        "(library); or use a local server (http://127.0.0.1:PORT/v1) or a sim: model"
    )


def check_endpoint(base_url: str, *, allow_remote: bool = False, model: str = "") -> None:
    """Raise :class:`~adapt.errors.RealModelRefused` unless a request to ``base_url`` may go."""
    reason = refusal_reason(
        base_url, allow_remote=allow_remote, forbidden=_remote_forbidden, model=model
    )
    if reason is not None:
        raise RealModelRefused(reason)
