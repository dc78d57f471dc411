"""Request and response models, one module per resource (as ``api/routes/``), grouped in
families: ``TaskCreate`` / ``TaskPublic`` / ``TaskDetail`` / ``TaskList`` (:mod:`.tasks`), the run
configuration's sections, mapped from the engine's (:mod:`.run_config`),
``NodePublic`` / ``TreeNode`` / ``NodeDetail`` (:mod:`.tree`), events (:mod:`.events`),
environments (:mod:`.environments`), health (:mod:`.health`), webhooks (:mod:`.webhooks`), and
``Problem`` (RFC 9457, :mod:`.problems`). Every model is importable from here too."""

from __future__ import annotations

from api.schemas.common import FROM_ROWS, STRICT
from api.schemas.environments import EnvironmentList, EnvironmentPublic
from api.schemas.events import (
    EVENT,
    CallEventPublic,
    EventList,
    EventPublic,
    FinishedEventPublic,
    NodeEventPublic,
    ResumedEventPublic,
    StepEventPublic,
)
from api.schemas.health import Health, Readiness, VersionInfo
from api.schemas.problems import FieldError, Problem
from api.schemas.run_config import BudgetCreate, ExecutorCreate, MonitorCreate, PlannerCreate
from api.schemas.tasks import (
    ForkCreate,
    ForkedFrom,
    ModelInfo,
    TaskCreate,
    TaskDetail,
    TaskLinks,
    TaskList,
    TaskModels,
    TaskPublic,
    TaskWebhook,
)
from api.schemas.tree import (
    LLMCallPublic,
    NodeDetail,
    NodePublic,
    StepPublic,
    TaskTree,
    TreeNode,
)
from api.schemas.webhooks import (
    DeliveryAttempt,
    WebhookDeliveryList,
    WebhookDeliveryPublic,
    WebhookEndpointCreate,
    WebhookEndpointList,
    WebhookEndpointPublic,
    WebhookEvent,
    WebhookSubscription,
)

__all__ = [
    "EVENT", "FROM_ROWS", "STRICT", "BudgetCreate", "CallEventPublic", "DeliveryAttempt",
    "EnvironmentList", "EnvironmentPublic", "EventList", "EventPublic", "ExecutorCreate",
    "FieldError", "FinishedEventPublic", "ForkCreate", "ForkedFrom", "Health", "LLMCallPublic", "ModelInfo", "MonitorCreate",
    "NodeDetail", "NodeEventPublic", "NodePublic", "PlannerCreate", "Problem", "Readiness",
    "ResumedEventPublic", "StepEventPublic", "StepPublic", "TaskCreate", "TaskDetail",
    "TaskLinks", "TaskList", "TaskModels", "TaskPublic", "TaskTree", "TaskWebhook", "TreeNode",
    "VersionInfo", "WebhookDeliveryList", "WebhookDeliveryPublic", "WebhookEndpointCreate",
    "WebhookEndpointList", "WebhookEndpointPublic", "WebhookEvent", "WebhookSubscription",
]
