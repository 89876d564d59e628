"""Language model inference over OpenAI-compatible chat completions (httpx, streamed).

Pure parts, free of settings: ``adapters`` (one class per server kind), ``messages`` (the
request and the answer), ``stream`` (SSE parsing, tool-call assembly), ``client`` (one
server: retries, concurrency limit) and ``router`` (model id to server). The actor that owns
them lives in ``ralph_context.actors.inference``.
"""

from __future__ import annotations

from ralph_context.inference.adapters import Adapter, adapter_for
from ralph_context.inference.client import RetryPolicy, ServerClient
from ralph_context.inference.messages import ChatRequest, Completion, Message, ToolCall, ToolSpec
from ralph_context.inference.router import ModelListing, Router, ServerStatus

__all__ = [
    "Adapter",
    "ChatRequest",
    "Completion",
    "Message",
    "ModelListing",
    "RetryPolicy",
    "Router",
    "ServerClient",
    "ServerStatus",
    "ToolCall",
    "ToolSpec",
    "adapter_for",
]
