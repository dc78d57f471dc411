"""The HTTP server of ``adapt env serve``: one installed environment over adapt's environment
protocol (:mod:`adapt.envs.remote.protocol`; its OpenAPI document is
``docs/remote-environments.openapi.json``, which :func:`openapi_document` writes).

The routes are plain functions (FastAPI runs them in its thread pool), so an environment whose
steps block (a sandbox, a subprocess) holds a thread, not the server. Errors are problem
details; an exception of the environment is logged and answered 500 with no trace of it.
With a token, every ``/v1`` route but ``/v1/health`` needs ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from importlib import resources
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from adapt.envs.base import (
    BaseEnvironment,
    Environment,
    answer_action,
    final_action,
    paper_profile,
    prompt_variables,
    success_reward,
)
from adapt.envs.remote import protocol as wire
from adapt.envs.tools import ToolCallError, declared_tools
from adapt.envs.verdicts import Verifiable
from adapt.envserve.sessions import Session, SessionError, SessionStore
from adapt.errors import InvalidConfig, UserError

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
#: prompt kinds the engine asks for (besides the package's ``prompts/*.txt``)
PROMPT_KINDS = ("executor", "planner", "plan_and_execute", "reflection", "stateact",
                "executor_spec", "spec_examples")
#: largest request body taken (bytes)
MAX_BODY_BYTES = 1_048_576

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGI = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
                Awaitable[None]]


def problem(status: int, slug: str | None, detail: str, *,
            errors: list[dict[str, Any]] | None = None,
            headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"type": f"{wire.PROBLEM_PREFIX}{slug}" if slug else "about:blank",
                            "title": slug.replace("-", " ").capitalize() if slug else "Error",
                            "status": status, "detail": detail}
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def describe(env_class: type[Environment]) -> wire.EnvironmentMeta:
    """The metadata ``GET /v1/environment`` answers for ``env_class``."""
    try:
        schema = env_class.config_model.model_json_schema()
    except Exception as exc:
        log.warning("%s: config_model has no JSON schema: %s", env_class.name, exc)
        schema = {}
    own_checkpoint = getattr(env_class, "checkpoint", None)
    return wire.EnvironmentMeta(
        name=env_class.name, description=env_class.description, config_schema=schema,
        default_max_steps=env_class.default_max_steps, action_grammar=env_class.action_grammar,
        state_fields=list(getattr(env_class, "state_fields", ())),
        success_reward=success_reward(env_class), final_action=final_action(env_class),
        answer_action=answer_action(env_class), paper_profile=dict(paper_profile(env_class)),
        verifies=callable(getattr(env_class, "verify", None))
        and callable(getattr(env_class, "verification_mark", None)),
        rolls_back=callable(own_checkpoint) and own_checkpoint is not BaseEnvironment.checkpoint,
        declares_tools=callable(getattr(env_class, "tools", None))
        and callable(getattr(env_class, "tool_action", None)))


def _prompt_kinds(env: Environment) -> list[str]:
    kinds = list(PROMPT_KINDS)
    package = getattr(env, "prompt_package", None)
    if isinstance(package, str):
        with contextlib.suppress(Exception):
            folder = resources.files(package).joinpath("prompts")
            kinds += sorted(p.name[:-4] for p in folder.iterdir()
                            if p.name.endswith(".txt") and p.is_file())
    return list(dict.fromkeys(kinds))


def _prompts(env: Environment) -> dict[str, str]:
    out: dict[str, str] = {}
    for kind in _prompt_kinds(env):
        try:
            out[kind] = env.prompt_template(kind)
        except (KeyError, FileNotFoundError):
            continue
    return out


def _state(env: Environment) -> str | None:
    state = env.salient_state()
    return state if isinstance(state, str) else None


class _BodyLimit:
    """Refuses a body over ``MAX_BODY_BYTES`` (413) and a POST without Content-Length (411)."""

    def __init__(self, app: ASGI) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            headers = dict(scope.get("headers") or [])
            length = headers.get(b"content-length")
            refusal = None
            if length is None or not length.isdigit():
                refusal = problem(411, "length-required", "send the body with a Content-Length")
            elif int(length) > MAX_BODY_BYTES:
                refusal = problem(413, "body-too-large",
                                  f"a request body may hold {MAX_BODY_BYTES} bytes at most")
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(env_class: type[Environment] | None, *, token: str | None = None,
               idle_seconds: float = 600.0, max_sessions: int = 100,
               max_changes: int = 10_000) -> FastAPI:
    """The server of ``env_class`` (``None``: a server with no environment, whose OpenAPI
    document is the protocol's)."""
    def mark(env: Environment) -> object | None:
        return env.verification_mark() if isinstance(env, Verifiable) else None

    def factory() -> Environment:
        if env_class is None:
            raise UserError("this server serves no environment")
        return env_class()

    store = SessionStore(factory, idle_seconds=idle_seconds, max_sessions=max_sessions,
                         max_changes=max_changes, mark=mark)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async def sweep() -> None:
            while True:
                await asyncio.sleep(max(0.05, min(idle_seconds / 4, 30.0)))
                await asyncio.to_thread(store.expire)

        sweeper = asyncio.create_task(sweep())
        try:
            yield
        finally:
            sweeper.cancel()
            await asyncio.to_thread(store.close_all)

    app = FastAPI(title="adapt environment protocol", version=str(wire.PROTOCOL_VERSION),
                  description="One environment served over HTTP for adapt's remote "
                  "environments (docs/remote-environments.md).", lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.store = store

    def authorized(authorization: Annotated[str | None, Header()] = None) -> None:
        if token is None:
            return
        given = (authorization or "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise SessionError(401, "unauthorized", "send Authorization: Bearer <token>")

    Auth = Depends(authorized)
    errors: dict[int | str, dict[str, Any]] = {
        code: {"model": wire.Problem, "description": text} for code, text in (
        (401, "No or a wrong bearer token."), (404, "No such session (start a new one)."),
        (409, "A sequence number out of order."), (422, "An invalid request or config."))}

    @app.exception_handler(SessionError)
    async def _session_error(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, SessionError):  # pragma: no cover (registered for that class)
            raise exc
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return problem(exc.status, exc.slug, exc.detail, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: Exception) -> Response:
        found = exc.errors() if isinstance(exc, RequestValidationError) else []
        listed = [{"field": ".".join(str(p) for p in e.get("loc", ())[1:]) or "(body)",
                   "message": str(e.get("msg", "invalid"))} for e in found]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in listed) or "invalid"
        return problem(422, "invalid-request", detail, errors=listed)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        return problem(status, None, f"{request.method} {request.url.path}: "
                       f"{getattr(exc, 'detail', 'error')}")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("%s %s failed", request.method, request.url.path)
        return problem(500, "environment-error", "the environment failed; see the server log")

    meta = describe(env_class) if env_class is not None else None

    @app.get(f"{wire.PREFIX}/health", summary="Liveness")
    def health() -> dict[str, Any]:
        return {"status": "ok", "sessions": len(store), **vars(store.counters)}

    @app.get(f"{wire.PREFIX}/environment", response_model=wire.EnvironmentMeta,
             dependencies=[Auth], responses={401: errors[401]},
             summary="What the environment is")
    def environment() -> wire.EnvironmentMeta:
        if meta is None:
            raise SessionError(503, "no-environment", "this server serves no environment")
        return meta

    @app.post(f"{wire.PREFIX}/sessions", response_model=wire.SessionCreated, status_code=201,
              dependencies=[Auth], responses={401: errors[401], 422: errors[422]},
              summary="Start an episode")
    def create_session(body: wire.SessionCreate) -> wire.SessionCreated:
        try:
            session, observation = store.create(body.config)
        except InvalidConfig as exc:
            raise SessionError(422, wire.INVALID_CONFIG, str(exc)) from None
        except UserError as exc:
            raise SessionError(422, wire.INVALID_CONFIG, str(exc)) from None
        env = session.env
        with session.lock:
            rolls = getattr(env, "rolls_back", None)
            tools = declared_tools(env) or []
            return wire.SessionCreated(
                session=session.id, observation=observation, goal=env.goal,
                state=_state(env), prompts=_prompts(env),
                prompt_variables=dict(prompt_variables(env)),
                rolls_back=bool(rolls()) if callable(rolls) else False,
                tools=[wire.ToolInfo(name=t.name, description=t.description,
                                     parameters=dict(t.parameters), read_only=t.read_only,
                                     destructive=t.destructive, idempotent=t.idempotent)
                       for t in tools], idle_seconds=idle_seconds)

    session_errors: dict[int | str, dict[str, Any]] = {
        k: errors[k] for k in (401, 404, 409, 422)}

    @app.post(f"{wire.PREFIX}/sessions/{{session_id}}/steps", response_model=wire.StepAnswer,
              dependencies=[Auth], responses=session_errors, summary="Apply one action")
    def step(session_id: str, body: wire.StepRequest) -> dict[str, Any]:
        def apply(session: Session) -> dict[str, Any]:
            env = session.env
            result = env.step(body.action)
            return {"observation": result.observation, "reward": float(result.reward),
                    "done": bool(result.done), "info": dict(result.info),
                    "failed": bool(env.is_failure(result.observation)), "state": _state(env)}

        return store.change(session_id, body.seq, "step", apply)

    @app.post(f"{wire.PREFIX}/sessions/{{session_id}}/checkpoints",
              response_model=wire.OperationAnswer, dependencies=[Auth],
              responses=session_errors, summary="Take a checkpoint (its mark is its seq)")
    def checkpoint(session_id: str, body: wire.CheckpointRequest) -> dict[str, Any]:
        def apply(session: Session) -> dict[str, Any]:
            store.keep_checkpoint(session, session.seq + 1, _undo(session).checkpoint())
            return {"state": _state(session.env)}

        return store.change(session_id, body.seq, "checkpoint", apply)

    @app.post(f"{wire.PREFIX}/sessions/{{session_id}}/rollbacks",
              response_model=wire.OperationAnswer, dependencies=[Auth],
              responses=session_errors, summary="Roll back to a checkpoint")
    def rollback(session_id: str, body: wire.RollbackRequest) -> dict[str, Any]:
        def apply(session: Session) -> dict[str, Any]:
            if body.to not in session.checkpoints:
                raise SessionError(409, "unknown-checkpoint",
                                   f"no checkpoint {body.to} in this session")
            _undo(session).rollback(session.checkpoints[body.to])
            return {"state": _state(session.env)}

        return store.change(session_id, body.seq, "rollback", apply)

    @app.post(f"{wire.PREFIX}/sessions/{{session_id}}/task-observation",
              response_model=wire.TaskObservation, dependencies=[Auth],
              responses=session_errors, summary="The task observation of a (sub-)goal")
    def task_observation(session_id: str, body: wire.GoalRequest) -> dict[str, Any]:
        return store.ask(session_id, lambda s: {
            "observation": s.env.task_observation(body.goal)})

    @app.post(f"{wire.PREFIX}/sessions/{{session_id}}/verify", response_model=wire.VerifyAnswer,
              dependencies=[Auth], responses=session_errors, summary="Check a goal")
    def verify(session_id: str, body: wire.VerifyRequest) -> dict[str, Any]:
        def check(session: Session) -> dict[str, Any]:
            env = session.env
            if not isinstance(env, Verifiable):
                return {"verdict": "unknown", "evidence": ""}
            since = session.marks.get(body.since) if body.since is not None else None
            verdict = env.verify(body.goal, since=since)
            return {"verdict": verdict.verdict, "evidence": verdict.evidence}

        return store.ask(session_id, check)

    @app.post(f"{wire.PREFIX}/sessions/{{session_id}}/tool-action",
              response_model=wire.ToolActionAnswer, dependencies=[Auth],
              responses=session_errors, summary="The action a tool call stands for")
    def tool_action(session_id: str, body: wire.ToolActionRequest) -> dict[str, Any]:
        def translate(session: Session) -> dict[str, Any]:
            tool_action = getattr(session.env, "tool_action", None)
            if not callable(tool_action):
                raise SessionError(422, wire.TOOL_CALL_ERROR, "this environment has no tools")
            try:
                return {"action": str(tool_action(body.name, body.arguments))}
            except ToolCallError as exc:
                raise SessionError(422, wire.TOOL_CALL_ERROR, str(exc)) from None

        return store.ask(session_id, translate)

    @app.delete(f"{wire.PREFIX}/sessions/{{session_id}}", status_code=204,
                dependencies=[Auth], responses={401: errors[401], 404: errors[404]},
                summary="End a session")
    def delete_session(session_id: str) -> Response:
        if not store.delete(session_id):
            raise SessionError(404, wire.SESSION_NOT_FOUND, "no such session")
        return Response(status_code=204)

    app.add_middleware(_BodyLimit)
    return app


def _undo(session: Session) -> Any:
    env = session.env
    rolls = getattr(env, "rolls_back", None)
    if not (callable(rolls) and rolls()):
        raise SessionError(409, "no-rollback", "this session does not roll back sub-tasks")
    return env


def openapi_document() -> dict[str, Any]:
    """The protocol's OpenAPI document (what ``docs/remote-environments.openapi.json``
    holds)."""
    return create_app(None).openapi()


__all__ = ["MAX_BODY_BYTES", "PROMPT_KINDS", "create_app", "describe", "openapi_document"]
