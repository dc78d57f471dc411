"""Every error the library raises, grouped by audience.

- ``ModelVisibleError``: a bad action or malformed output. Recorded in the trajectory; the loop
  goes on (the model sees the observation).
- ``BudgetError``: a per-task budget is exhausted. Ends the running branch; the task ends with
  status ``budget_exceeded``.
- ``CancelledByUser``: the cancel callback said stop. The task ends with status ``cancelled``.
- ``UserError``: misconfiguration (unknown environment, bad model spec, invalid config). The
  message says how to fix it.
- ``ProviderError``: the LLM provider failed after retries.
"""

from __future__ import annotations


class AdaptError(Exception):
    """Base class of every error raised by the ``adapt`` library."""


# -- errors the model should see -------------------------------------------------------------
class ModelVisibleError(AdaptError):
    """A bad action or malformed model output: recorded, and the loop goes on."""


class PlanParseError(ModelVisibleError):
    """A plan whose structure cannot be used (e.g. no steps at all)."""


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


class ModelSpecError(UserError):
    """A model spec string that cannot be parsed or names an unknown backend."""


class RealModelRefused(UserError):
    """The guard refused to send a request to a non-local LLM endpoint."""


# -- provider errors -------------------------------------------------------------------------
class ProviderError(AdaptError):
    """The LLM provider failed (after retries)."""


class ReplayDivergence(AdaptError):
    """A replayed run asked for something the recording does not hold."""


# -- service errors ----------------------------------------------------------------------------
class LeaseLost(AdaptError):
    """Another attempt owns the task now; this attempt's writes are refused."""
