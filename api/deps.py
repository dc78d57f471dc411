"""Dependencies as ``Annotated`` aliases: ``SessionDep``, ``SettingsDep``, ``DispatcherDep``,
``SessionsDep``, ``TenantDep`` (API-key authentication), ``TaskServiceDep`` (the service
facade the task and webhook routes call) and ``LibraryServiceDep`` (the experience library's)."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.service import auth
from adapt.service.dispatch import Dispatcher
from adapt.service.errors import InvalidField
from adapt.service.facade import TaskService
from adapt.service.library import LibraryService
from adapt.settings import Settings
from adapt.store.text import UNSTORABLE_MESSAGE, find_unstorable
from api.problems import ProblemError

log = logging.getLogger(__name__)

#: how long "are there any API keys?" is cached; a new key takes effect within this time
KEYS_CACHE_SECONDS = 1.0


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    sessions: async_sessionmaker[AsyncSession] = request.app.state.sessions
    async with sessions() as session:
        yield session


def get_sessions(request: Request) -> async_sessionmaker[AsyncSession]:
    sessions: async_sessionmaker[AsyncSession] = request.app.state.sessions
    return sessions


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_dispatcher(request: Request) -> Dispatcher:
    dispatcher: Dispatcher = request.app.state.dispatcher
    return dispatcher


SessionDep = Annotated[AsyncSession, Depends(get_session)]
SessionsDep = Annotated[async_sessionmaker[AsyncSession], Depends(get_sessions)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
DispatcherDep = Annotated[Dispatcher, Depends(get_dispatcher)]


class KeysCache:
    """Caches ``auth.auth_required`` for ``ttl`` seconds (per app); once true it stays true
    (authentication never reopens by itself)."""

    def __init__(self, ttl: float = KEYS_CACHE_SECONDS) -> None:
        self.ttl = ttl
        self._value: bool | None = None
        self._at = 0.0
        self._lock = asyncio.Lock()

    async def required(self, session: AsyncSession) -> bool:
        if self._value or (self._value is not None and time.monotonic() - self._at < self.ttl):
            return self._value
        async with self._lock:
            if self._value is None or time.monotonic() - self._at >= self.ttl:
                self._value = await auth.auth_required(session)
                self._at = time.monotonic()
            return self._value

    def clear(self) -> None:
        self._value = None


_bearer = HTTPBearer(
    auto_error=False,
    description="API key: `Authorization: Bearer adapt_<prefix>_<secret>` (create one with "
    "`adapt keys create --tenant NAME`). Optional only while the server runs open: before the "
    "first key is ever created (ADAPT_AUTH_MODE=auto) or with ADAPT_AUTH_MODE=off; requests "
    "then run as tenant `default`.",
)


def _unauthorized(detail: str, error: str | None = None) -> ProblemError:
    challenge = 'Bearer realm="adapt"'
    if error:
        challenge += f', error="{error}"'
    return ProblemError(401, detail, slug="unauthorized",
                        headers={"WWW-Authenticate": challenge})


async def get_tenant(
    request: Request,
    session: SessionDep,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The caller's tenant. ``ADAPT_AUTH_MODE``: ``keys`` always needs a key; ``off`` runs
    open (tenant ``default``); ``auto`` runs open until the first key is ever created and needs
    a key from then on, also after every key is revoked. A presented key must always be
    valid."""
    header: str | None = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _unauthorized("malformed Authorization header: send "
                                "'Authorization: Bearer adapt_<prefix>_<secret>'",
                                "invalid_request")
        found = await auth.key_for(session, token.strip())
        if found is None:
            raise _unauthorized("invalid or revoked API key; create one with "
                                "`adapt keys create --tenant NAME`", "invalid_token")
        request.state.api_key_id = found[1]  # who decides an approval (its audit)
        return found[0]
    settings: Settings = request.app.state.settings
    mode = settings.auth_mode
    cache: KeysCache = request.app.state.keys_cache
    if mode == "keys" or (mode == "auto" and await cache.required(session)):
        raise _unauthorized("an API key is required: send 'Authorization: Bearer "
                            "adapt_<prefix>_<secret>' (the operator creates one with `adapt "
                            "keys create --tenant NAME`)")
    return auth.DEFAULT_TENANT


TenantDep = Annotated[str, Depends(get_tenant)]


def get_task_service(request: Request, session: SessionDep, tenant: TenantDep,
                     settings: SettingsDep, dispatcher: DispatcherDep) -> TaskService:
    return TaskService(session, settings, tenant, dispatcher,
                       key_id=getattr(request.state, "api_key_id", None))


TaskServiceDep = Annotated[TaskService, Depends(get_task_service)]


def get_library_service(session: SessionDep, tenant: TenantDep) -> LibraryService:
    return LibraryService(session, tenant)


LibraryServiceDep = Annotated[LibraryService, Depends(get_library_service)]


async def check_metrics_access(request: Request, session: SessionDep) -> None:
    """``/metrics`` aggregates every tenant: it needs ``ADAPT_METRICS_TOKEN`` as a bearer token;
    without that setting it answers only while the API runs open."""
    settings: Settings = request.app.state.settings
    header = request.headers.get("authorization") or ""
    if settings.metrics_token is not None:
        expected = f"Bearer {settings.metrics_token.get_secret_value()}"
        if hmac.compare_digest(header.strip().encode(), expected.encode()):
            return
        raise _unauthorized("/metrics needs the metrics token: send 'Authorization: Bearer "
                            "<ADAPT_METRICS_TOKEN>'", "invalid_token" if header else None)
    cache: KeysCache = request.app.state.keys_cache
    if settings.auth_mode == "off" or (settings.auth_mode == "auto"
                                       and not await cache.required(session)):
        return
    raise _unauthorized("/metrics shows every tenant's figures, so API keys do not open it: the "
                        "operator sets ADAPT_METRICS_TOKEN and scrapes with 'Authorization: "
                        "Bearer <token>'")


MetricsAccessDep = Depends(check_metrics_access)


async def check_text_inputs(request: Request) -> None:
    """Path and query parameters and stored headers may not hold characters no database can
    store (NUL, lone surrogates): a 422 naming the parameter, before any query runs."""
    sources = (("path", dict(request.path_params)), ("query", request.query_params.multi_items()),
               ("header", [("Idempotency-Key", request.headers.get("idempotency-key") or "")]))
    for location, items in sources:
        pairs = items.items() if isinstance(items, dict) else items
        for name, value in pairs:
            if find_unstorable(str(name), "") is not None or find_unstorable(value, "") \
                    is not None:
                raise InvalidField(str(name), UNSTORABLE_MESSAGE, location=location)
