"""Reading a streamed chat completion: server-sent events in, one answer out. No I/O here.

A stream is a series of ``data: {json}`` events ending with ``data: [DONE]``. Each JSON chunk
carries a ``delta``: a piece of text, or pieces of tool calls. A tool call arrives spread over
many chunks, tied together by its ``index``: the first piece usually holds the ``id`` and the
function ``name``, later ones append to the ``arguments`` string. Usage, when the server
reports it, comes in a chunk of its own, often with no choices.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass

from ralph_context.errors import InferenceServerError
from ralph_context.inference.messages import ToolCall

__all__ = ["StreamAccumulator", "sse_data"]

_DONE = "[DONE]"


async def sse_data(lines: AsyncIterable[str]) -> AsyncGenerator[str, None]:
    """The data of each server-sent event, until ``[DONE]``.

    Follows the SSE format: ``data:`` lines of one event are joined by newlines, a blank
    line ends the event, lines starting with ``:`` are comments (keep-alives), and other
    fields (``event:``, ``id:``) are ignored. Lines after ``[DONE]`` are read but dropped:
    reading the body to its end lets httpx's own line and text generators finish instead
    of being abandoned (which trio reports as a ResourceWarning).
    """
    data: list[str] = []
    done = False
    async for line in lines:
        if line:
            field, _, value = line.partition(":")
            if field == "data":
                data.append(value.removeprefix(" "))
            continue
        if data:
            payload, data = "\n".join(data), []
            done = done or payload.strip() == _DONE
            if not done:
                yield payload
    if data and not done and (payload := "\n".join(data)).strip() != _DONE:
        yield payload


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


class StreamAccumulator:
    """Builds one answer from the chunks of a stream (or from a whole, unstreamed reply).

    Args:
        source: The server's name, for error messages.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.finish_reason: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.first_token_at: float | None = None
        self.error: InferenceServerError | None = None
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _PartialCall] = {}

    @property
    def text(self) -> str:
        """The assistant text so far."""
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        """Reasoning text streamed apart from the answer (``reasoning_content``)."""
        return "".join(self._reasoning)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls so far, in index order; a call the server sent no id for gets
        ``call_<index>`` so a loop can still answer it."""
        return tuple(
            ToolCall(call.id or f"call_{index}", call.name, call.arguments)
            for index, call in sorted(self._calls.items())
        )

    def feed(self, payload: str) -> None:
        """Take one event's data. A chunk that is not JSON, or an error the server streamed,
        is kept for :meth:`check` and ends the answer: later chunks are ignored, so the
        caller can still read the stream to its end."""
        if self.error is not None:
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            self.error = InferenceServerError(
                f"{self.source} streamed something that is not JSON: {payload[:200]!r}"
            )
            return
        try:
            self._take(chunk, whole=False)
        except InferenceServerError as exc:
            self.error = exc

    def check(self) -> None:
        """Raise the stream's error, if it had one, once the stream has ended.

        Raises:
            InferenceServerError: The stream held an error or something unreadable, or
                ended with no answer at all (no text, no tool call, no finish reason).
        """
        if self.error is not None:
            raise self.error
        if self.finish_reason is None and self.first_token_at is None:
            raise InferenceServerError(f"{self.source} ended the stream without an answer")

    def feed_whole(self, reply: object) -> None:
        """Take a complete, unstreamed reply (a server that ignored ``"stream": true``).

        Raises:
            InferenceServerError: The reply is an error or has no choices.
        """
        self._take(reply, whole=True)
        if not isinstance(reply, dict) or not isinstance(reply.get("choices"), list):
            raise InferenceServerError(f"{self.source} answered without choices: {reply!r:.200}")

    def _take(self, chunk: object, *, whole: bool) -> None:
        if not isinstance(chunk, dict):
            raise InferenceServerError(f"{self.source} sent a chunk that is not an object")
        error = chunk.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            raise InferenceServerError(f"{self.source} reported an error: {message}")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.prompt_tokens = _int_or(usage.get("prompt_tokens"), self.prompt_tokens)
            self.completion_tokens = _int_or(usage.get("completion_tokens"), self.completion_tokens)
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return
        for choice in choices:
            # Only the first choice: we never ask for n > 1.
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("message" if whole else "delta")
            if isinstance(delta, dict):
                self._take_delta(delta, whole=whole)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = choice["finish_reason"]

    def _take_delta(self, delta: dict[str, object], *, whole: bool) -> None:
        pieces: list[tuple[list[str], object]] = [
            (self._text, delta.get("content")),
            # Reasoning models behind LM Studio, vLLM and others stream their thinking apart.
            (self._reasoning, delta.get("reasoning_content", delta.get("reasoning"))),
        ]
        for parts, piece in pieces:
            if isinstance(piece, str) and piece:
                parts.append(piece)
                self._mark_first_token()
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position, fragment in enumerate(calls):
                if isinstance(fragment, dict):
                    self._take_call(fragment, position if whole else None)

    def _take_call(self, fragment: dict[str, object], position: int | None) -> None:
        index = fragment.get("index")
        if not isinstance(index, int):
            # A whole reply lists calls in order; a stream without indexes (some servers)
            # sends each call complete in one piece, so each piece is a new call.
            index = position if position is not None else len(self._calls)
        call = self._calls.setdefault(index, _PartialCall())
        self._mark_first_token()
        if isinstance(fragment.get("id"), str) and not call.id:
            call.id = str(fragment["id"])
        function = fragment.get("function")
        if not isinstance(function, dict):
            return
        name = function.get("name")
        # Most servers send the name once; some repeat it in every piece, a few split it.
        if isinstance(name, str) and name != call.name:
            call.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments += arguments
        elif isinstance(arguments, dict):
            # Ollama-style servers may send the arguments as an object, not as a string.
            call.arguments += json.dumps(arguments)

    def _mark_first_token(self) -> None:
        if self.first_token_at is None:
            self.first_token_at = time.perf_counter()


def _int_or(value: object, fallback: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else fallback
