"""The FastAPI application: ``create_app(settings, dispatcher=...)``.

Lifespan: create the database engine and session factory; in embedded mode apply pending
migrations, otherwise refuse to start while migrations are pending; create the dispatcher
(``workers.dispatchers.make_dispatcher``) unless one was passed in; close everything on
shutdown (a dispatcher passed in is the caller's to close).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.errors import UserError
from adapt.service import remote_envs
from adapt.service.dispatch import Dispatcher
from adapt.service.gc_tuning import tune_gc
from adapt.settings import Settings, get_settings
from adapt.store import migrate
from adapt.store.db import create_engine, session_factory
from adapt.version import __version__
from api import docs, openapi, problems, ui
from api.deps import KeysCache, check_text_inputs
from api.edge import EdgeMiddleware, HostPolicy
from api.middleware import BodyLimitMiddleware, CatchAllMiddleware
from api.routes import (
    approvals,
    environments,
    events,
    health,
    library,
    metrics,
    tasks,
    tree,
    webhooks,
)
from api.sse import StreamOptions, StreamSlots

log = logging.getLogger(__name__)

DESCRIPTION = """\
ADaPT as a service: submit a task (a goal in a text environment), and a worker runs a recursive
planner-executor on it. Every node of the decomposition tree, every executor step and every LLM
call is stored, so the tree can be polled (`GET /tasks/{id}/tree` with ETags), streamed
(`GET /tasks/{id}/events`, Server-Sent Events) and inspected afterwards.

Errors are RFC 9457 problem details (`application/problem+json`). Authentication: API keys
(`Authorization: Bearer adapt_...`); while no key exists the API is open (tenant `default`).
"""


def _safe_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


async def prepare_database(settings: Settings) -> None:
    """Embedded: apply pending migrations. Otherwise: refuse to run on an outdated schema (a
    newer one is served: ``migrate.check_serving``)."""
    url = settings.database_url
    if settings.embedded:
        await asyncio.to_thread(migrate.upgrade, url)
        return
    try:
        await asyncio.to_thread(migrate.check_serving, url)
    except UserError as exc:
        raise UserError(f"the database {_safe_url(url)}: {exc}") from None


def _make_dispatcher(settings: Settings,
                     sessions: async_sessionmaker[AsyncSession]) -> Dispatcher:
    try:  # imported lazily: api/ does not depend on the worker code until it runs
        module = importlib.import_module("workers.dispatchers")
    except ImportError as exc:
        raise UserError(f"no task dispatcher available (workers.dispatchers: {exc}); "
                        "reinstall adapt (pip install -e .)") from exc
    dispatcher: Dispatcher = module.make_dispatcher(settings, sessions)
    return dispatcher


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    await prepare_database(settings)
    await remote_envs.prefetch()  # their metadata, for /environments (a server down: later)
    engine = create_engine(settings.database_url)
    sessions = session_factory(engine)
    app.state.engine = engine
    app.state.sessions = sessions
    given: Dispatcher | None = app.state.given_dispatcher
    owned: Dispatcher | None = None
    try:
        if given is None:
            owned = _make_dispatcher(settings, sessions)
        app.state.dispatcher = given or owned
        tune_gc()  # a long-lived process from here on (full collections paused tree reads)
        log.info("API ready (database %s, %s mode)", _safe_url(settings.database_url),
                 "embedded" if settings.embedded else "broker")
        url: str | None = getattr(app.state, "serve_url", None)  # set by `adapt serve`
        if url is not None:
            log.info("serving on %s: the viewer on %s/ui, the API's docs on %s/docs",
                     url, url, url)
        yield
    finally:
        if owned is not None:
            try:
                await owned.aclose()
            except Exception:
                log.exception("closing the dispatcher failed")
        await engine.dispose()


def create_app(settings: Settings | None = None, *,
               dispatcher: Dispatcher | None = None) -> FastAPI:
    settings = settings or get_settings()
    remote_envs.register(settings)  # the operator's remote environments (a refused URL: raises)
    app = FastAPI(
        title="adapt",
        version=__version__,  # pyproject's, from the package metadata
        summary="Recursive planner-executor service for LLM agents (ADaPT)",
        description=DESCRIPTION,
        lifespan=lifespan,
        dependencies=[Depends(check_text_inputs)],
        docs_url=None,  # served from local files below: /docs works offline
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.given_dispatcher = dispatcher
    app.state.keys_cache = KeysCache()
    app.state.rendered_trees = tree.RenderedTrees()
    app.state.stream_slots = StreamSlots(settings.tenant_max_event_streams)
    app.state.stream_options = StreamOptions(
        poll_seconds=float(getattr(settings, "sse_poll_seconds", 0.2)),
        keepalive_seconds=float(getattr(settings, "sse_keepalive_seconds", 15.0)),
    )
    problems.install(app)
    openapi.install(app, settings)
    docs.install(app)
    for module in (tasks, approvals, tree, events, environments, health, metrics, webhooks,
                   library):
        app.include_router(module.router)
    ui.install(app)
    # outermost last: the edge checks (Host, Origin, form types) run first, then the body
    # limits, before anything reads the body
    app.add_middleware(CatchAllMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes,
                       timeout=settings.http_body_timeout_seconds)
    app.add_middleware(EdgeMiddleware,
                       policy=HostPolicy.build(settings.allowed_hosts,
                                               [settings.host, settings.published_host]))
    return app
