"""LLM backends: the ChatModel protocol, OpenAI-compatible clients, specs, pricing, replay.

The OpenAI client, the model specs and pricing are imported on first use (``import adapt.llm``
does not import ``openai``), so the engine's modules stay quick to import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from adapt.llm.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    Message,
    ScoringModel,
    ToolCall,
    Usage,
    WrapperModel,
    can_score,
)
from adapt.llm.recording import (
    RecordedCall,
    Recording,
    RecordingModel,
    ReplayCursor,
    ReplayModel,
    request_fingerprint,
)

if TYPE_CHECKING:
    from adapt.llm.openai_compat.models import OpenAIChatModel, OpenAICompletionModel
    from adapt.llm.openai_compat.pool import ClientPool
    from adapt.llm.pricing import Pricing, cost
    from adapt.llm.spec import ModelSpec, is_simulated, load_model, parse_model_spec

_LAZY = {
    "ClientPool": "adapt.llm.openai_compat.pool",
    "OpenAIChatModel": "adapt.llm.openai_compat.models",
    "OpenAICompletionModel": "adapt.llm.openai_compat.models",
    "Pricing": "adapt.llm.pricing",
    "cost": "adapt.llm.pricing",
    "ModelSpec": "adapt.llm.spec",
    "is_simulated": "adapt.llm.spec",
    "load_model": "adapt.llm.spec",
    "parse_model_spec": "adapt.llm.spec",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'adapt.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "ClientPool",
    "Message",
    "ModelSpec",
    "OpenAIChatModel",
    "OpenAICompletionModel",
    "Pricing",
    "RecordedCall",
    "Recording",
    "RecordingModel",
    "ReplayCursor",
    "ReplayModel",
    "ScoringModel",
    "ToolCall",
    "Usage",
    "WrapperModel",
    "can_score",
    "cost",
    "is_simulated",
    "load_model",
    "parse_model_spec",
    "request_fingerprint",
]
