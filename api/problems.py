"""Errors as RFC 9457 problem details (``application/problem+json``).

Routes raise :class:`ProblemError` for what only the API checks (authentication); the
service's client errors (``adapt.service.errors.ClientError``: each carries its status and
problem type), request validation errors, HTTP errors of the framework (unknown route, wrong
method) and library ``UserError`` s are turned into problem details here. Unexpected exceptions are logged and answered with a 500 problem
without a stack trace (see ``api.middleware.CatchAllMiddleware``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from adapt.errors import UserError
from adapt.service.errors import ClientError

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:adapt:problem:"


class ProblemError(Exception):
    """An HTTP error answered as problem details."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        slug: str | None = None,
        title: str | None = None,
        errors: Sequence[Mapping[str, Any]] | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.slug = slug
        self.title = title or HTTPStatus(status).phrase
        self.errors = list(errors) if errors is not None else None
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})


def problem_body(
    status: int,
    detail: str,
    *,
    slug: str | None = None,
    title: str | None = None,
    errors: Sequence[Mapping[str, Any]] | None = None,
    instance: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": f"{TYPE_PREFIX}{slug}" if slug else "about:blank",
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    if errors is not None:
        body["errors"] = list(errors)
    if extra:
        body.update(extra)
    return body


def problem_response(
    status: int,
    detail: str,
    *,
    headers: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> JSONResponse:
    return JSONResponse(problem_body(status, detail, **kwargs), status_code=status,
                        headers=dict(headers or {}), media_type=PROBLEM_JSON)


# -- validation errors ------------------------------------------------------------------------
def _field_name(loc: Sequence[Any]) -> tuple[str, str]:
    location = str(loc[0]) if loc else "body"
    rest = [str(part) for part in loc[1:]]
    return location, ".".join(rest) if rest else "(body)"


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime == "application/json" or (mime.startswith("application/")
                                          and mime.endswith("+json"))


def validation_problem(request: Request, exc: RequestValidationError) -> dict[str, Any]:
    raw = list(exc.errors())
    body_errors = [e for e in raw if tuple(e.get("loc", ()))[:1] == ("body",)]
    content_type = request.headers.get("content-type")
    if any(e.get("type") == "json_invalid" for e in raw):
        err = next(e for e in raw if e.get("type") == "json_invalid")
        reason = (err.get("ctx") or {}).get("error", "malformed JSON")
        pos = tuple(err.get("loc", ()))[1:2]
        where = f" at position {pos[0]}" if pos else ""
        detail = f"the request body is not valid JSON: {reason}{where}"
        return problem_body(400, detail, slug="malformed-json", title="Malformed JSON",
                            errors=[{"location": "body", "field": "(body)", "message": detail}])
    sent_body = isinstance(exc.body, bytes | bytearray) and bool(exc.body)
    if body_errors and sent_body and not _is_json(content_type):
        detail = ("the request body must be JSON sent with Content-Type: application/json "
                  f"(got {content_type or 'no Content-Type'})")
        return problem_body(415, detail, slug="unsupported-content-type",
                            title="Body must be JSON",
                            errors=[{"location": "header", "field": "content-type",
                                     "message": detail}])
    errors: list[dict[str, Any]] = []
    for e in raw:
        location, field = _field_name(tuple(e.get("loc", ())))
        message = str(e.get("msg", "invalid"))
        if e.get("type") == "missing" and field == "(body)":
            message = "a JSON request body is required"
        elif e.get("type") == "extra_forbidden":
            message = "unknown field (not part of this request's schema); remove it"
        errors.append({"location": location, "field": field, "message": message,
                       "type": e.get("type")})
    count = len(errors)
    listing = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    detail = f"{count} invalid field{'' if count == 1 else 's'}: {listing}"
    return problem_body(422, detail, slug="validation-error", title="Invalid request",
                        errors=errors)


# -- handlers -----------------------------------------------------------------------------------
async def _problem_handler(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, ProblemError):  # registered for that class only
        raise exc
    return problem_response(exc.status, exc.detail, slug=exc.slug, title=exc.title,
                            errors=exc.errors, headers=exc.headers, extra=exc.extra,
                            instance=request.url.path)


async def _client_error_handler(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, ClientError):  # registered for that class only
        raise exc
    return problem_response(exc.status, exc.detail, slug=exc.problem_type, title=exc.title,
                            errors=exc.field_errors(), headers=exc.headers(), extra=exc.extra(),
                            instance=request.url.path)


async def _validation_handler(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, RequestValidationError):  # registered for that class only
        raise exc
    body = validation_problem(request, exc)
    body["instance"] = request.url.path
    return JSONResponse(body, status_code=int(body["status"]), media_type=PROBLEM_JSON)


async def _http_handler(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, StarletteHTTPException):  # registered for that class only
        raise exc
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no route {request.url.path}; see /docs for the API"
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        allowed = allowed_methods(request)
        if allowed:
            headers["Allow"] = ", ".join(allowed)
        detail = (f"method {request.method} is not allowed on {request.url.path}; allowed: "
                  f"{headers.get('Allow', '-')}")
    return problem_response(exc.status_code, detail, headers=headers,
                            instance=request.url.path)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves on this path (Starlette's 405 names only the first
    matching route's)."""
    methods: set[str] = set()
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes):
            methods.add(method)
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


async def _user_error_handler(request: Request, exc: Exception) -> JSONResponse:
    return problem_response(422, str(exc), slug="invalid-request", title="Invalid request",
                            instance=request.url.path)


def install(app: FastAPI) -> None:
    app.add_exception_handler(ProblemError, _problem_handler)
    app.add_exception_handler(ClientError, _client_error_handler)
    app.add_exception_handler(RequestValidationError, _validation_handler)
    app.add_exception_handler(StarletteHTTPException, _http_handler)
    app.add_exception_handler(UserError, _user_error_handler)
