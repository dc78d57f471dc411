"""The operator's model endpoint allow-list: which base URLs a model spec may name, and the key
that goes with each.

A key belongs to one endpoint and is only ever sent there. A spec without ``@<base_url>`` uses
the default endpoint (the configured OpenAI base URL). Loopback endpoints are allowed without
being listed only when the caller says so (the operator's own CLI); the service never does.
Base URLs are compared after normalisation (scheme and host lower-cased, default port dropped,
trailing ``/`` removed); host names are never resolved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from adapt.errors import EndpointNotAllowed as EndpointNotAllowed
from adapt.errors import ModelSpecError
from adapt.llm.guard import is_loopback

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_base_url(url: str) -> str:
    """``url`` in the form endpoints are compared in; :class:`ModelSpecError` if malformed."""
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        scheme, host, port = "", "", None
    if scheme not in _DEFAULT_PORTS or not host or parts.username or parts.password \
            or parts.query or parts.fragment:
        raise ModelSpecError(
            f"malformed base_url {url!r}: expected an http(s) URL without credentials, query "
            "or fragment, such as http://127.0.0.1:8000/v1 or https://api.openai.com/v1"
        )
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


@dataclass(frozen=True)
class Endpoint:
    """One allowed base URL and the key configured for it (``None``: no key is sent)."""

    name: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    #: what the server is (``openai``, ``vllm``, ``llama.cpp``): where it reads grammars and
    #: JSON schemas (``adapt.llm.openai_compat.endpoint.SERVER_KINDS``); ``None``: unknown
    server_kind: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", normalize_base_url(self.base_url))


@dataclass(frozen=True)
class EndpointList:
    """The allowed endpoints; ``default`` (a name) serves specs that name no base URL."""

    endpoints: Sequence[Endpoint] = ()
    default: str | None = None
    allow_loopback: bool = False

    def describe(self) -> str:
        listed = ", ".join(f"{e.name} ({e.base_url})" for e in self.endpoints)
        extra = "; any loopback endpoint" if self.allow_loopback else ""
        return (listed or "none") + extra

    def _refusal(self, what: str) -> EndpointNotAllowed:
        return EndpointNotAllowed(
            f"{what} is not an endpoint this server allows; allowed endpoints: "
            f"{self.describe()}. The operator lists endpoints in ADAPT_LLM_ENDPOINTS (and "
            "ADAPT_OPENAI_BASE_URL / ADAPT_OPENAI_API_KEY); or use a sim: model"
        )

    def resolve(self, base_url: str | None) -> Endpoint:
        """The endpoint a spec's base URL (``None``: the default) maps to, with its key."""
        if base_url is None:
            for e in self.endpoints:
                if e.name == self.default:
                    return e
            raise self._refusal("the default model endpoint (no '@<base_url>' in the spec)")
        url = normalize_base_url(base_url)
        for e in self.endpoints:
            if e.base_url == url:
                return e
        if self.allow_loopback and is_loopback(url):
            return Endpoint(name="loopback", base_url=url)
        raise self._refusal(f"base_url {url}")
