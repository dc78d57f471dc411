"""``/healthz`` (the process is up), ``/readyz`` (database and dispatcher are usable, and
with a broker: at least one live worker serves the queue) and ``/version`` (the release and the
schema it expects)."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from adapt.service.operations import CHECK_TIMEOUT, check_database, check_workers, release
from api.deps import DispatcherDep
from api.problems import problem_response
from api.schemas import Health, Problem, Readiness, VersionInfo

log = logging.getLogger(__name__)

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="Liveness: the process is up")
async def healthz() -> Health:
    return Health()


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Readiness: the database answers, the dispatcher accepts work and (with a broker) "
    "a live worker serves the queue",
    responses={503: {"model": Problem, "description": "Not ready; `checks` says which check "
                     "failed"}},
)
async def readyz(request: Request, dispatcher: DispatcherDep) -> Readiness | JSONResponse:
    checks = {"database": await check_database(request.app.state.engine)}
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            ready = await dispatcher.ready()
        checks["dispatcher"] = "ok" if ready else "not ready"
    except Exception as exc:
        log.warning("readiness: dispatcher check failed: %s", exc)
        checks["dispatcher"] = f"failed: {type(exc).__name__}"
    queue = getattr(dispatcher, "queue", None)  # a broker's queue (the embedded runner: None)
    if isinstance(queue, str) and checks["database"] == "ok":
        checks["workers"] = await check_workers(request.app.state.engine, queue)
    failed = [name for name, state in checks.items() if state != "ok"]
    if failed:
        return problem_response(
            503, f"not ready: {', '.join(f'{n} {checks[n]}' for n in failed)}",
            slug="not-ready", title="Service Unavailable",
            extra={"checks": checks, "failed": failed},
        )
    return Readiness(status="ready", checks=checks)


@router.get("/version", response_model=VersionInfo,
            summary="The release running and the newest database migration it ships")
async def version() -> VersionInfo:
    running, head = release()
    return VersionInfo(version=running, schema_revision=head)
