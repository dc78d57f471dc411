"""``/library``: the tenant's experience library (verified sub-goal solutions that tasks with
``reuse.skills`` replay; docs/experience.md): list, delete, export and import."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from api.deps import LibraryServiceDep
from api.schemas.library import (
    LibraryEntryPublic,
    LibraryExport,
    LibraryImported,
    LibraryList,
)
from api.schemas.problems import Problem

router = APIRouter(tags=["library"])

PROBLEMS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "Missing or invalid API key"},
    404: {"model": Problem, "description": "Unknown entry (or another tenant's)"},
    422: {"model": Problem, "description": "Invalid request; `errors` names each bad field"},
}


@router.get("/library", response_model=LibraryList, responses=PROBLEMS,
            summary="This tenant's experience library, newest first, with use and failure "
            "counts")
async def list_entries(
    library: LibraryServiceDep,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=200, description="Page size.")] = 50,
    environment: Annotated[str | None, Query(max_length=128)] = None,
    dropped: Annotated[bool, Query(description="Include entries dropped for failing.")] = False,
) -> LibraryList:
    found = await library.page(offset=offset, limit=limit, environment=environment,
                               dropped=dropped)
    return LibraryList(items=[LibraryEntryPublic.model_validate(r) for r in found.rows],
                       total=found.total, offset=offset, limit=limit)


@router.get("/library/export", response_model=LibraryExport, responses=PROBLEMS,
            summary="Export this tenant's live entries as JSON (to import elsewhere)")
async def export_entries(
    library: LibraryServiceDep,
    environment: Annotated[str | None, Query(max_length=128)] = None,
) -> LibraryExport:
    return LibraryExport.model_validate(await library.export(environment))


@router.post("/library/import", response_model=LibraryImported, responses=PROBLEMS,
             summary="Import entries exported from a library (this server's or another's)",
             description="Each entry is added to this tenant's library as a new entry whose "
             "origin says it was imported; a goal that already has a live entry keeps it. "
             "Entries are checked (sizes, fields, registered environments) before any is "
             "added.")
async def import_entries(body: LibraryExport, library: LibraryServiceDep) -> LibraryImported:
    done = await library.import_entries([e.model_dump() for e in body.entries])
    return LibraryImported(added=done.added, skipped=done.skipped)


@router.delete("/library/{entry_id}", status_code=204, response_class=Response,
               responses=PROBLEMS, summary="Delete an entry of this tenant's library")
async def delete_entry(entry_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
                       library: LibraryServiceDep) -> Response:
    await library.delete(entry_id)
    return Response(status_code=204)
