"""What a failed call to an OpenAI-compatible endpoint becomes: a
:class:`~adapt.errors.ProviderError` that names the endpoint and the HTTP status, says whether a
retry may help and how long the server asked to wait; the upstream body (which a user-chosen
endpoint controls) goes to the log alone."""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Mapping

import openai

from adapt.errors import ProviderError

logger = logging.getLogger(__name__)

_HINTS = {
    400: "check the model name and the request parameters",
    401: "check the API key (OPENAI_API_KEY, or ADAPT_OPENAI_API_KEY for the service)",
    403: "the API key may not use this model or project; check the key and its permissions",
    404: "check the model name and that base_url ends in /v1",
    422: "the server rejected the parameters; check the model name and request parameters",
}


def refused(exc: BaseException) -> bool:
    """Whether a "timeout" was a connection that failed at once (refused, unreachable). The
    aiohttp adapter of ``openai`` maps every aiohttp connection error to a connect timeout;
    the cause chain still holds the operating system's error, and no timeout."""
    seen: BaseException | None = exc
    refused = False
    for _ in range(8):  # a short chain: openai's error, httpx's, aiohttp's, the OS's
        if seen is None:
            break
        if isinstance(seen, TimeoutError):
            return False
        refused = refused or isinstance(seen, OSError)
        seen = seen.__cause__ or seen.__context__
    return refused


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The pause a response asks for: ``retry-after-ms``, or ``retry-after`` in seconds or as
    an HTTP date; None when absent or unreadable."""
    raw = headers.get("retry-after-ms")
    if raw is not None:
        try:
            return max(0.0, float(raw) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _provider_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or body.get("detail")
        if isinstance(message, dict):
            message = message.get("message")
        if message:
            return str(message)
    return str(exc.message)


def provider_error(exc: openai.APIError, *, kind: str, endpoint: str, model: str,
                   timeout: float, max_retries: int) -> ProviderError:
    """A :class:`ProviderError` whose message names the endpoint and the HTTP status only;
    the upstream body (which a user-chosen endpoint controls) goes to the log alone."""
    where = f"{kind} call to endpoint {endpoint} (model {model!r})"
    retries = f"after {max_retries} retries"
    transient, status, retry_after = True, None, None
    if isinstance(exc, openai.APITimeoutError) and not refused(exc):
        msg = f"{where} timed out ({timeout:g}s per attempt) {retries}"
        logged = msg
    elif isinstance(exc, openai.APIConnectionError):
        msg = f"{where} could not connect {retries}; is the server running?"
        logged = f"{msg} ({exc})"
    elif isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = retry_after_seconds(exc.response.headers)
        if status == 429 or status >= 500 or status in (408, 409):
            msg = f"{where} failed with HTTP {status} {retries}"
        else:
            transient = False
            hint = _HINTS.get(status, "check the request and the endpoint")
            msg = f"{where} failed with HTTP {status} ({hint})"
        logged = f"{msg}: {_provider_message(exc)}"
    else:
        transient = False
        msg = f"{where} failed ({type(exc).__name__})"
        logged = f"{msg}: {exc}"
    if transient and max_retries == 0:  # the caller retries (adapt.llm.retry)
        logger.info("%s", logged)
    else:
        logger.warning("%s", logged)
    return ProviderError(msg, retryable=transient, retry_after=retry_after, status=status)
