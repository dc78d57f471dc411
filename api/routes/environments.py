"""``/environments``: what tasks may run on, with each environment's config schema."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from adapt.service.operations import catalog
from api.deps import SettingsDep, TenantDep
from api.routes.tasks import PROBLEMS
from api.schemas import EnvironmentList, EnvironmentPublic
from api.schemas.environments import DefaultModel

router = APIRouter(prefix="/environments", tags=["environments"])


@router.get(
    "",
    response_model=EnvironmentList,
    summary="Registered environments",
    description="Every registered environment (built-in and plug-in) with its description and "
    "the JSON schema of its `environment_config`, plus the strategies, executor kinds and "
    "profiles a task may use (built-in and plug-in).",
    responses={401: PROBLEMS[401]},
)
async def list_environments(_tenant: TenantDep, settings: SettingsDep) -> EnvironmentList:
    found = await run_in_threadpool(catalog, settings)  # a remote environment's metadata: a request
    default = None
    if found.default_model is not None:
        model, simulated, plays = found.default_model
        default = DefaultModel(model=model, simulated=simulated, environments=plays)
    return EnvironmentList(
        items=[EnvironmentPublic.model_validate(info.model_dump())
               for info in found.environments],
        strategies=found.strategies, executors=found.executors, profiles=found.profiles,
        default_model=default,
    )
