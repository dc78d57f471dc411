"""LLM backends: the ChatModel protocol, OpenAI-compatible clients, specs, pricing, replay."""

from __future__ import annotations

from adapt.llm.base import ChatModel, ChatRequest, ChatResponse, Message, Usage
from adapt.llm.openai_backend import ClientPool, OpenAIChatModel, OpenAICompletionModel
from adapt.llm.pricing import Pricing, cost
from adapt.llm.recording import (
    RecordedCall,
    Recording,
    RecordingModel,
    ReplayCursor,
    ReplayModel,
    request_fingerprint,
)
from adapt.llm.spec import ModelSpec, is_simulated, load_model, parse_model_spec

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
    "Usage",
    "cost",
    "is_simulated",
    "load_model",
    "parse_model_spec",
    "request_fingerprint",
]
