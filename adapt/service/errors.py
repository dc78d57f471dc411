"""Every error the service raises, grouped by audience. (The library's own errors, which the
engine and its plug-ins raise, are in :mod:`adapt.errors`.)

- ``ClientError``: the service refuses what a client asked for. Each class says how the API
  answers it: an HTTP ``status``, a problem ``problem_type`` (the last part of the problem's
  ``type`` URN) and ``title``; an instance adds the fields it names, headers (``Retry-After``)
  and extra members of the problem document. ``api/problems.py`` turns any of them into a
  problem detail, so a route raises nothing of its own for them.
- ``WorkerError``: ends one attempt of a task inside a worker; never shown to a client. The
  store raises them (its writes are fenced by the lease), the worker's execution catches them.

This module imports nothing of adapt, so every layer that raises these (the store below the
service, the service, the API above it) may import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class ServiceError(Exception):
    """Base class of every error the service raises."""


# -- errors a client sees ----------------------------------------------------------------------


class ClientError(ServiceError):
    """A request the service refuses; ``detail`` says why and how to fix it."""

    status: ClassVar[int] = 400
    problem_type: ClassVar[str] = "bad-request"
    #: None: the status's reason phrase
    title: ClassVar[str | None] = None

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def field_errors(self) -> list[dict[str, str]] | None:
        """The problem's ``errors`` member (the fields at fault), if it has one."""
        return None

    def headers(self) -> Mapping[str, str]:
        return {}

    def extra(self) -> Mapping[str, Any]:
        """Members the problem document carries besides the standard ones."""
        return {}


class InvalidField(ClientError):
    """One field of a request is invalid; ``field`` is its dotted path, ``location`` where it
    was sent (``body``, ``query``, ``header``)."""

    status = 422
    problem_type = "validation-error"
    title = "Invalid request"

    def __init__(self, field: str, message: str, *, location: str = "body") -> None:
        self.field = field
        self.message = message
        self.location = location
        super().__init__(f"{field}: {message}")

    def field_errors(self) -> list[dict[str, str]]:
        return [{"location": self.location, "field": self.field, "message": self.message}]


class SubmissionInvalid(InvalidField):
    """One field of a task submission is invalid (a check the request schema cannot make:
    the environment's config, the registries, the model specs, the operator's limits)."""


class NotFound(ClientError):
    """No such resource for this tenant (another tenant's looks the same)."""

    status = 404
    problem_type = "not-found"

    def __init__(self, what: str, ident: object) -> None:
        super().__init__(f"{what} {ident!s} not found (or it belongs to another tenant); "
                         "check the id")


class IdempotencyConflict(ClientError):
    """The idempotency key was already used for a different request."""

    status = 409
    problem_type = "idempotency-conflict"

    def __init__(self, key: str, task_id: str) -> None:
        self.key = key
        self.task_id = task_id
        super().__init__(
            f"Idempotency-Key {key!r} was already used for a different request (task "
            f"{task_id}); reuse a key only to retry the identical request, or send a new key"
        )

    def extra(self) -> Mapping[str, Any]:
        return {"task_id": self.task_id}


class NotResumable(ClientError):
    """The task finished for good; the message says why."""

    status = 409
    problem_type = "not-resumable"


class NotDecidable(ClientError):
    """An approval that can take no decision (decided already, or its task finished)."""

    status = 409
    problem_type = "not-decidable"


class NotForkable(ClientError):
    """A fork that cannot rebuild its environment at the node (``adapt.service.fork``)."""

    status = 409
    problem_type = "not-forkable"
    title = "Conflict"


class TaskActive(ClientError):
    """The task is queued or running; what was asked needs a finished task."""

    status = 409
    problem_type = "task-active"
    title = "Conflict"

    def __init__(self, task_id: str, status: str, what: str) -> None:
        self.task_id = task_id
        self.task_status = status
        super().__init__(
            f"task {task_id} is {status}: only a finished task can be {what}; cancel it first "
            f"(POST /tasks/{task_id}/cancel) and try again once it has finished")

    def extra(self) -> Mapping[str, Any]:
        return {"task_id": self.task_id, "task_status": self.task_status}


class EndpointLimit(ClientError):
    """The tenant has as many webhook endpoints as the operator allows."""

    status = 409
    problem_type = "webhook-endpoint-limit"
    title = "Conflict"

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"this tenant has {limit} webhook endpoints, the most it may have "
            f"(ADAPT_WEBHOOK_MAX_ENDPOINTS_PER_TENANT = {limit}); delete one first "
            "(DELETE /webhooks/{id})")

    def extra(self) -> Mapping[str, Any]:
        return {"limit": self.limit}


class RateLimited(ClientError):
    """The tenant has too many active tasks or submitted too many in the last minute."""

    status = 429
    problem_type = "rate-limited"

    def __init__(self, message: str, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(message)

    def headers(self) -> Mapping[str, str]:
        return {"Retry-After": str(self.retry_after)}


class EnvironmentNotAvailable(ClientError):
    """The task's environment is served by another process, which does not answer now."""

    status = 503
    problem_type = "environment-unavailable"
    title = "Environment unavailable"

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        super().__init__(f"environment {name!r} is not available now ({reason}); try again "
                         "later")

    def headers(self) -> Mapping[str, str]:
        return {"Retry-After": "10"}


# -- errors that end a worker's attempt --------------------------------------------------------


class WorkerError(ServiceError):
    """Ends one attempt of a task inside a worker (nothing about the task is final)."""


class LeaseLost(WorkerError):
    """Another attempt owns the task now; this attempt's writes are refused."""


class TaskGone(WorkerError, LookupError):
    """The task row does not exist (or the condition on it failed)."""


class WrittenByNewerRelease(WorkerError):
    """The task's stored config names fields or values this release does not know: a newer
    release's API stored it while this worker still runs (an upgrade under way). The worker
    hands the task back for a newer one instead of failing it."""
