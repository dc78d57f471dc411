"""Every error the library raises, grouped by audience.

- ``ModelVisibleError``: a model output the engine cannot use (a plan's execution order that
  does not parse). Caught where it happens and shown to the model or recorded; the run goes on.
  (A bad action is not an exception at all: it is the step's observation or ``Step.error``.)
- ``BudgetError``: a per-task budget is exhausted. Ends the running branch; the task ends with
  status ``budget_exceeded``.
- ``CancelledByUser``: the cancel callback said stop. The task ends with status ``cancelled``.
- ``UserError``: misconfiguration (unknown environment, bad model spec, invalid config, an
  unreadable behaviour specification). The message says how to fix it.
- ``ProviderError``: the LLM provider failed after retries.
- ``RemoteEnvironmentError``: a remote environment's server answered what its client cannot use
  (a broken answer, a refusal, a replay that came out differently).
- ``TaskInterrupted``: the attempt stops, but nothing about the task is final (the provider or
  a remote environment is unreachable for now, the worker is shutting down); the service
  resumes it later by replay.

The service's own errors (a submission refused, a lease lost) are not library errors: they are
in :mod:`adapt.service.errors`, with the HTTP status the API answers them with.
"""

from __future__ import annotations

from typing import Any


class AdaptError(Exception):
    """Base class of every error raised by the ``adapt`` library."""


# -- errors the model should see -------------------------------------------------------------


class ModelVisibleError(AdaptError):
    """A model output the engine cannot use: recorded, and the run goes on."""


class LogicSyntaxError(ModelVisibleError, ValueError):
    """A plan's execution order that does not parse (unbalanced parentheses, stray words)."""


# -- budget errors: end the branch -----------------------------------------------------------


class BudgetError(AdaptError):
    """A per-task budget is exhausted."""

    def __init__(self, resource: str, limit: float, spent: float) -> None:
        self.resource = resource
        self.limit = limit
        self.spent = spent
        super().__init__(f"budget exceeded: {resource} (limit {limit:g}, spent {spent:g})")


class CancelledByUser(AdaptError):
    """The task was cancelled; raised at the next LLM-call boundary."""


# -- user errors: misconfiguration -----------------------------------------------------------


class UserError(AdaptError):
    """A mistake in what the user asked for; the message says how to fix it."""


class UnknownEnvironment(UserError):
    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        self.available = available
        super().__init__(
            f"unknown environment {name!r}; available: {', '.join(sorted(available)) or '(none)'}"
        )


class InvalidConfig(UserError):
    """An environment config or model spec that does not validate."""


class OverLimit(UserError):
    """A figure of a request over the operator's maximum (a budget figure over
    ``ADAPT_MAX_BUDGET``); ``field`` names it as the request does (``budget.max_tokens``)."""

    def __init__(self, field: str, value: float, limit: float) -> None:
        self.field = field
        self.value = value
        self.limit = limit
        super().__init__(f"{field}: {value:g} is over the maximum of {limit:g}")


class ModelSpecError(UserError):
    """A model spec string that cannot be parsed or names an unknown backend."""


class SpecSyntaxError(UserError):
    """A behaviour specification that cannot be read or does not describe a valid agent."""


class RealModelRefused(UserError):
    """The guard refused to send a request to a non-local LLM endpoint."""


class GrammarError(UserError):
    """A malformed GBNF grammar (with the position and what was expected)."""


class EndpointNotAllowed(ModelSpecError):
    """A model spec names a base URL the operator did not allow."""


class PathNotAllowed(UserError):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


class ExtraMissing(UserError):
    """An optional extra a feature needs is not installed; the message says how to install it."""


class ToolServerFailed(UserError):
    """A tool server (MCP) could not be started or reached, or stopped answering; the message
    names the server and what it last said."""


class InvalidCursor(UserError):
    """A pagination cursor that this server did not hand out."""


class OutboundRefused(UserError):
    """A URL that an outbound feature (webhooks; remote environments and tool servers next)
    may not send to: malformed, or leading to an address the operator did not allow. The
    message is for the user who chose the URL; ``detail`` (what a name resolved to) is for the
    server log only."""

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        self.detail = detail
        super().__init__(message)


# -- provider errors -------------------------------------------------------------------------


class ProviderError(AdaptError):
    """The LLM provider failed (after retries). ``retryable``: a transient failure (429, 5xx,
    timeout, connection); ``retry_after``: the seconds the provider asked to wait, if it said."""

    def __init__(self, message: str, *, retryable: bool = False,
                 retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


# -- remote environments -------------------------------------------------------------------------


class RemoteEnvironmentError(AdaptError):
    """A remote environment's server answered something its client cannot use. The message
    names the environment and says what went wrong in a few words of ours (at most a short,
    sanitised excerpt of the server's own message); the rest goes to the log."""


class RemoteRefused(RemoteEnvironmentError):
    """A remote environment's server answered 4xx. ``slug``: the problem type's last part
    (``""``: not a problem document of adapt's protocol); ``detail``: a sanitised excerpt of
    its message; ``body``: the whole answer (for the client's decisions and the log only)."""

    def __init__(self, message: str, *, status: int, slug: str, detail: str,
                 body: object = None) -> None:
        super().__init__(message)
        self.status = status
        self.slug = slug
        self.detail = detail
        self.body = body


class RemoteMaybeApplied(RemoteEnvironmentError):
    """A request to a remote environment that must not be sent twice failed after it may
    have arrived (its client starts the episode again and replays it)."""


# -- interruptions: the attempt stops, the task is resumed later --------------------------------


class TaskInterrupted(AdaptError):
    """Stop this attempt without finishing the task (not caught by the engine)."""


class ProviderUnavailable(ProviderError, TaskInterrupted):
    """A transient provider failure outlasted the retries the task may spend."""

    def __init__(self, message: str, *, retries: int = 0) -> None:
        super().__init__(message, retryable=True)
        self.retries = retries


class EnvironmentUnavailable(TaskInterrupted):
    """A remote environment's server did not answer for as long as a call may be retried (or
    its metadata could not be read); the task can be resumed once it answers again."""


class Draining(TaskInterrupted):
    """The worker is shutting down: no new LLM call is started."""


class InFlightCallRefused(TaskInterrupted):
    """A resumed attempt met a call that was in flight when the task's last attempt stopped (the
    model asked for it, its result was never recorded), and the tool does not say it is
    read-only or idempotent: sending it again could repeat a side effect, so the attempt stops
    and the task stays resumable. The message names the call."""


class AwaitingApproval(TaskInterrupted):
    """The run reached a point the task asked a person to approve (``RunConfig.approval``) and
    no decision is recorded yet: the attempt stops there, everything before it stored, and the
    task waits (no lease, no worker) until the decision comes. ``request`` is the engine's
    ``ApprovalRequest``; ``requests`` every request the run waits for (more than one only
    with ``approval.parallel_siblings``: sibling nodes that wait at the same time), in the
    order they were made."""

    def __init__(self, request: Any) -> None:
        requests = list(request) if isinstance(request, list | tuple) else [request]
        first = requests[0]
        message = f"node {first.node_id} awaits approval of its {first.kind}"
        if len(requests) > 1:
            message += f" (and {len(requests) - 1} more requests wait)"
        super().__init__(message)
        self.request = first
        self.requests = requests


class InvalidProposal(UserError):
    """An edited proposal (a plan, an action) that does not validate; ``field`` names the bad
    part, as a path under ``proposal``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class ReplayDivergence(AdaptError):
    """A replayed run asked for something the recording does not hold."""
