"""The OpenAPI document, made to say what the server does: every error response is
``application/problem+json`` with the ``Problem`` schema (FastAPI's default 422 schema is
replaced), every operation documents 400/408/413/415 where a body is parsed, the edge's
refusals (421 for an unknown Host; 403 and 415 for cross-site and form requests on POST, PUT,
PATCH and DELETE: ``api.edge``), and the bearer security scheme is optional while the server
may run open (``ADAPT_AUTH_MODE`` auto or off).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from adapt.settings import Settings
from api.edge import UNSAFE_METHODS
from api.problems import PROBLEM_JSON

_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_BODY_ERRORS = {
    "400": "Malformed JSON body",
    "408": "Body not received within ADAPT_HTTP_BODY_TIMEOUT_SECONDS",
    "413": "Body larger than ADAPT_MAX_BODY_BYTES",
    "415": "Body sent without a JSON Content-Type",
}
_UNSAFE_ERRORS = {
    "403": "Cross-site request (a foreign Origin) refused",
    "415": "Form or text/plain Content-Type refused (JSON only)",
}
_UNKNOWN_HOST = "Host header not among the server's names (ADAPT_ALLOWED_HOSTS)"


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {PROBLEM_JSON: {"schema": _PROBLEM_REF}}}


def build_openapi(app: FastAPI, settings: Settings) -> dict[str, Any]:
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(title=app.title, version=app.version, summary=app.summary,
                      description=app.description, routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    open_possible = settings.auth_mode != "keys"
    for operations in doc.get("paths", {}).values():
        for method, operation in operations.items():
            responses: dict[str, Any] = operation.setdefault("responses", {})
            for status, response in list(responses.items()):
                if status[:1] in ("4", "5"):
                    described = response.get("description") or "Error"
                    responses[status] = {**_problem(described),
                                         **({"headers": response["headers"]}
                                            if "headers" in response else {})}
            if "requestBody" in operation:
                for status, description in _BODY_ERRORS.items():
                    responses.setdefault(status, _problem(description))
            if method.upper() in UNSAFE_METHODS:
                for status, description in _UNSAFE_ERRORS.items():
                    responses.setdefault(status, _problem(description))
            responses.setdefault("421", _problem(_UNKNOWN_HOST))
            if "parameters" in operation or "requestBody" in operation:
                responses.setdefault("422", _problem("Invalid request; `errors` names each "
                                                     "bad field"))
            responses.setdefault("500", _problem("Unexpected server error (logged)"))
            if open_possible and operation.get("security"):
                operation["security"] = [*operation["security"], {}]
    app.openapi_schema = doc
    return doc


def install(app: FastAPI, settings: Settings) -> None:
    app.openapi = lambda: build_openapi(app, settings)  # type: ignore[method-assign]
