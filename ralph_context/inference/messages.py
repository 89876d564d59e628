"""What goes to a language model and what comes back: plain values, no I/O.

Messages and tool definitions stay in OpenAI's JSON shape (``{"role": ..., "content": ...}``,
``{"type": "function", "function": {...}}``) and are passed through untouched, so a ReAct
loop can send assistant tool calls and ``tool`` results back without translation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import JsonValue

from ralph_context.errors import InvalidInput

__all__ = ["ChatRequest", "Completion", "Message", "ToolCall", "ToolSpec"]

Message = Mapping[str, JsonValue]
ToolSpec = Mapping[str, JsonValue]

MAX_TOKENS = 1_000_000


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to ask for; validated on construction.

    Raises:
        InvalidInput: No messages, a message without a role, or a parameter out of range.
    """

    model_id: str
    messages: tuple[Message, ...]
    temperature: float = 0.7
    max_tokens: int = 1024
    tools: tuple[ToolSpec, ...] = ()
    seed: int | None = None
    repeat_penalty: float | None = None
    response_format: Mapping[str, JsonValue] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model_id, str) or not self.model_id.strip():
            raise InvalidInput("model_id must be a non-empty string (see list_models)")
        if not self.messages:
            raise InvalidInput("messages must hold at least one message")
        for index, message in enumerate(self.messages):
            if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
                raise InvalidInput(f"messages[{index}] must be an object with a string 'role'")
        for index, tool in enumerate(self.tools):
            if not isinstance(tool, Mapping):
                raise InvalidInput(f"tools[{index}] must be an object")
        if not _finite(self.temperature) or not 0.0 <= self.temperature <= 2.0:
            raise InvalidInput(f"temperature must be in 0-2, got {self.temperature!r}")
        if _not_int(self.max_tokens) or not 1 <= self.max_tokens <= MAX_TOKENS:
            raise InvalidInput(f"max_tokens must be an integer in 1-{MAX_TOKENS}")
        if self.seed is not None and _not_int(self.seed):
            raise InvalidInput(f"seed must be an integer, got {self.seed!r}")
        if self.repeat_penalty is not None and (
            not _finite(self.repeat_penalty) or self.repeat_penalty <= 0
        ):
            raise InvalidInput(f"repeat_penalty must be above 0, got {self.repeat_penalty!r}")

    def body(self, extra: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
        """The JSON body of a streaming request, plus the adapter's ``extra`` fields."""
        body: dict[str, JsonValue] = {
            "model": self.model_id,
            "messages": [dict(message) for message in self.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stream": True,
        }
        if self.tools:
            body["tools"] = [dict(tool) for tool in self.tools]
        if self.seed is not None:
            body["seed"] = self.seed
        if self.response_format is not None:
            body["response_format"] = dict(self.response_format)
        body.update(extra)
        return body


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _not_int(value: object) -> bool:
    return not isinstance(value, int) or isinstance(value, bool)


@dataclass(frozen=True)
class ToolCall:
    """A function call the model asked for; ``arguments`` is the raw JSON string it wrote
    (possibly invalid JSON: parsing and judging it is the caller's business)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    """The model's answer.

    Attributes:
        model_id: The model asked for.
        server: Name of the server that answered.
        text: The assistant text (may be empty when the model only called tools).
        tool_calls: Function calls, in the order the model made them.
        finish_reason: ``stop``, ``length``, ``tool_calls``..., if the server said.
        latency_ms: From sending the request that succeeded to the end of the stream.
        first_token_ms: From sending it to the first generated text or tool call.
        attempts: Requests it took (1 unless a 429, a 5xx or a lost connection was retried).
        reasoning: Separate reasoning text, for servers that stream it apart from the answer.
        prompt_tokens: Tokens the server counted in the prompt, if it reported usage.
        completion_tokens: Tokens it generated, if it reported usage.
    """

    model_id: str
    server: str
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    latency_ms: float = 0.0
    first_token_ms: float | None = None
    attempts: int = 1
    reasoning: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def as_message(self) -> dict[str, JsonValue]:
        """This answer as an assistant message, to send back in the next turn of a loop."""
        message: dict[str, JsonValue] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message
