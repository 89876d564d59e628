"""MCP over stdio where every request gets an answer.

The SDK's stdio transport parses each line it reads and, when that fails, hands the
exception to the session, which drops it: a request holding a lone surrogate (an escaped
``\\ud800``, which its JSON parser refuses) or nested deeper than the parser goes got no
answer at all, and its client waited for ever (issue 42: 46 of 46 such requests), while
over HTTP the same bodies get 400.

So the lines are read here first, with the HTTP transport's limits: at most
``DEFAULT_MAX_REQUEST_BODY_SIZE`` (4 MiB) a line, UTF-8, and a JSON-RPC message as the
SDK's own adapter parses it (the parser the HTTP transport uses too, so its limits on depth
and text are the same ones). A line that passes goes to the SDK as it came; one that fails
is answered with a JSON-RPC error naming the problem, with the request's id when the line
shows it (``request_id`` walks only the top level, so it finds the id in a line too deep
or too long to parse), else ``null``, as JSON-RPC asks.

Two shapes the SDK's parser takes or drops without an answer are answered here too
(issue 62): a request whose ``id`` is neither a string nor an integer (an object, an array,
``true``, ``1.5``, ``null``) parses as a *notification*, which gets no answer by design, so
it is refused as an invalid request with ``id: null`` (its id cannot be echoed); and a
JSON-RPC batch (an array), which the SDK cannot take on any protocol version (batches were
part of MCP 2025-03-26 only, and removed in 2025-06-18), gets an array of errors, one per
request in it carrying that request's id (JSON-RPC's answer to a batch is an array), saying
to send each request on its own line; an empty batch gets one error, as JSON-RPC asks.

While serving, fd 0 reads the null device (as the SDK arranges when it reads stdin
itself), so no child process takes the client's bytes; the SDK points fd 1 at stderr.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, BinaryIO, cast

import anyio
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import RootModel, ValidationError

from ralph_context._logging import get_logger

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = [
    "MAX_LINE_BYTES",
    "BatchErrors",
    "answered_stdio",
    "batch_refusal",
    "refusal",
    "request_id",
    "serve_stdio",
]

log = get_logger("ralph_context.server")

# The most a request may take, as a line here and as a body over HTTP.
MAX_LINE_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
# What the rest of a line too long is skipped in (bounded memory, whatever its length).
_SKIP_BYTES = 1 << 16
_SPACE = re.compile(r"[ \t\n\r]*")
# Where a value can end, or a nested one or a string start.
_MARK = re.compile(r'["{}\[\],]')
# Decodes one JSON scalar where asked (a string is not recursive; neither is a number).
_SCALAR = json.JSONDecoder(strict=False)
# The parser's words for what issue 42 found unanswered, and what they mean to a person.
_SURROGATE = (
    "a lone UTF-16 surrogate (\\ud800-\\udfff) is not text: send the character itself, or "
    "both halves of its pair"
)
_HINTS = {
    "surrogate": _SURROGATE,
    "hex escape": _SURROGATE,
    "recursion limit": "nested deeper than the parser takes (about 200 levels, as over HTTP)",
}


async def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes."""
    async with answered_stdio() as (read, write):
        # No public way to run an MCPServer on given streams: this is run_stdio_async's.
        inner = server._lowlevel_server
        await inner.run(read, write, inner.create_initialization_options())


@asynccontextmanager
async def answered_stdio() -> AsyncIterator[
    tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]
]:
    """The SDK's stdio streams (the client's messages in, ours out), every line that is
    not a message answered on the way (see the module's docstring)."""
    with _claimed_stdin() as wire:
        lines = _Lines(wire)
        # The SDK reads any async iterable of lines given as stdin (iteration is all it
        # uses), and claims stdout itself.
        async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write):
            lines.answer_on(write)
            yield read, write


@contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """The protocol's input on a descriptor of its own, fd 0 on the null device meanwhile.

    The duplicate is never closed: a worker thread may still wait in a read on it when
    serving ends (as in the SDK, which never closes its own).
    """
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield os.fdopen(wire, "rb", closefd=False)
    finally:
        os.dup2(wire, 0)


class _Lines:
    """stdin's lines for the SDK's reader: each one that is a JSON-RPC message, in order;
    every other line is answered here (on ``answer_on``'s stream) and not passed on."""

    def __init__(self, wire: BinaryIO) -> None:
        self._wire = _Wire(wire.fileno())
        self._answers: WriteStream[SessionMessage] | None = None
        # The SDK starts reading before it hands over the stream answers go on.
        self._ready = anyio.Event()

    def answer_on(self, stream: WriteStream[SessionMessage]) -> None:
        self._answers = stream
        self._ready.set()

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        await self._ready.wait()
        assert self._answers is not None
        while True:
            line = await self._wire.readline(MAX_LINE_BYTES + 1)
            if not line:
                raise StopAsyncIteration
            cut = not line.endswith(b"\n") and len(line) > MAX_LINE_BYTES
            if cut:
                await self._skip_rest()
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue  # no request, nothing to answer
            refused = None if cut else batch_refusal(line)
            if refused is None:
                refused = refusal(line, cut=cut)
            if refused is None:
                return line.decode("utf-8")
            if isinstance(refused, JSONRPCError):
                log.warning("stdio_request_refused", id=refused.id, problem=refused.error.message)
            else:
                log.warning("stdio_batch_refused", requests=len(refused.root))
            try:
                if isinstance(refused, JSONRPCError) or refused.root:
                    # The SDK's writer only calls model_dump_json on what it is given: a
                    # batch's errors go out as one array line.
                    await self._answers.send(SessionMessage(cast("JSONRPCMessage", refused)))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise StopAsyncIteration from None  # the server stopped: nobody to answer

    async def _skip_rest(self) -> None:
        """Read past the rest of a line too long to take, a bounded piece at a time."""
        while (piece := await self._wire.readline(_SKIP_BYTES)) and not piece.endswith(b"\n"):
            pass


class BatchErrors(RootModel[list[JSONRPCError]]):
    """The answer to a JSON-RPC batch: one error per request in it (none for its
    notifications), written as one array."""


def batch_refusal(line: bytes) -> BatchErrors | JSONRPCError | None:
    """The answer to ``line`` when it is a JSON-RPC batch (an array), else ``None``.

    Each request of the batch (an object with a ``method`` and an ``id``) gets an error
    with its own id, so a client waiting on each id is answered; an element that is no
    request gets one with ``id: null``; a notification gets none (none may be answered). An
    empty batch is one error, and an array that does not parse is left to ``refusal``.
    """
    if not line.lstrip().startswith(b"["):
        return None
    try:
        elements = json.loads(line)
    except (ValueError, RecursionError):
        return None  # refusal names the problem
    if not isinstance(elements, list):
        return None
    message = (
        "Invalid request: JSON-RPC batches are not taken (MCP removed them in 2025-06-18; "
        "this server takes none on any version): send each request on its own line"
    )
    if not elements:
        return _error("", INVALID_REQUEST, f"{message}; this batch is empty")
    errors = []
    for element in elements:
        if isinstance(element, dict) and "method" in element and "id" not in element:
            continue  # a notification: never answered
        given = element.get("id") if isinstance(element, dict) else None
        ident = given if isinstance(given, str) or type(given) is int else None
        error = ErrorData(code=INVALID_REQUEST, message=message)
        errors.append(JSONRPCError(jsonrpc="2.0", id=ident, error=error))
    return BatchErrors(errors)


class _Wire:
    """Lines of a file descriptor, read when the event loop says it is readable, so a
    cancelled read ends at once (Ctrl-C: ``interrupt``). A read in a worker thread could
    not be cancelled, and held the process until the client closed stdin. Only pipes,
    sockets and terminals are polled: a regular file (``< requests.jsonl``) or a device such
    as ``/dev/null`` never blocks, epoll refuses it (``EPERM``), and it is read directly."""

    def __init__(self, descriptor: int) -> None:
        self._fd = descriptor
        self._buffer = bytearray()
        self._eof = False
        mode = os.fstat(descriptor).st_mode
        self._polled = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(descriptor)

    async def readline(self, limit: int) -> bytes:
        """Up to ``limit`` bytes through the next newline; ``b""`` at the end."""
        while True:
            end = self._buffer.find(b"\n", 0, limit)
            if end >= 0 or len(self._buffer) >= limit or (self._eof and self._buffer):
                size = end + 1 if end >= 0 else min(limit, len(self._buffer))
                line = bytes(self._buffer[:size])
                del self._buffer[:size]
                return line
            if self._eof:
                return b""
            if self._polled:
                await anyio.wait_readable(self._fd)
            try:
                chunk = os.read(self._fd, _SKIP_BYTES)
            except BlockingIOError:
                continue
            self._eof = not chunk
            self._buffer += chunk


def refusal(line: bytes, *, cut: bool = False) -> JSONRPCError | None:
    """The JSON-RPC error answering ``line`` (without its newline), or ``None`` when it is
    a message the SDK takes. ``cut``: only the first ``MAX_LINE_BYTES`` of a longer line.
    """
    text = line.decode("utf-8", errors="replace")
    if cut:
        limit = f"{MAX_LINE_BYTES:,} bytes ({MAX_LINE_BYTES >> 20} MiB, as over HTTP)"
        return _error(text, INVALID_REQUEST, f"Request too large: the limit is {limit}")
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = f"{line[exc.start]:#04x}"
        return _error(text, PARSE_ERROR, f"Parse error: not UTF-8 (byte {exc.start} is {byte})")
    try:
        message = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            said = first["msg"]
            hint = next((h for words, h in _HINTS.items() if words in said), None)
            said += f"; {hint}" if hint else ""
            return _error(text, PARSE_ERROR, f"Parse error: {said}")
        where = ".".join(str(part) for part in first["loc"]) or "message"
        problem = f"not a JSON-RPC 2.0 message ({where}: {first['msg']})"
        return _error(text, INVALID_REQUEST, f"Invalid request: {problem}")
    if isinstance(message, JSONRPCNotification) and _has_id(text):
        # A request whose id is of no type a request may have parses as a notification,
        # which is never answered: its client would wait for ever.
        error = ErrorData(
            code=INVALID_REQUEST,
            message="Invalid request: id must be a string or an integer (JSON-RPC 2.0, MCP)",
        )
        return JSONRPCError(jsonrpc="2.0", id=None, error=error)
    return None


def _has_id(text: str) -> bool:
    """True when the JSON object ``text`` (one the parser took) has a top-level ``id``."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and "id" in parsed


def _error(text: str, code: int, message: str) -> JSONRPCError:
    error = ErrorData(code=code, message=message)
    return JSONRPCError(jsonrpc="2.0", id=request_id(text), error=error)


def request_id(text: str) -> RequestId | None:
    """The top-level ``"id"`` of the JSON object ``text`` starts, if it has a string or an
    integer there; ``None`` when it has none before the text stops making sense.

    It walks the object's top level only, skipping each value by its brackets and strings
    (a loop, no recursion), so it finds the id in text nested too deep, or cut too short,
    to parse.
    """
    try:
        at = _blank(text, 0)
        if not text.startswith("{", at):
            return None
        at += 1
        while text.startswith('"', at := _blank(text, at)):
            key, at = _SCALAR.raw_decode(text, at)
            at = _blank(text, at)
            if not text.startswith(":", at):
                return None
            at = _blank(text, at + 1)
            if key == "id":
                if text.startswith(("{", "["), at):
                    return None
                value, _ = _SCALAR.raw_decode(text, at)
                if isinstance(value, str) or type(value) is int:
                    return value
                return None
            at = _blank(text, _skip_value(text, at))
            if not text.startswith(",", at):
                return None
            at += 1
    except ValueError:  # a string or a scalar that does not parse
        return None
    return None


def _blank(text: str, at: int) -> int:
    found = _SPACE.match(text, at)
    return found.end() if found is not None else at


def _skip_value(text: str, at: int) -> int:
    """Where the value starting at ``at`` ends: the index of the ``,`` or ``}`` after it at
    the top level, or the end of ``text``."""
    depth = 0
    while (found := _MARK.search(text, at)) is not None:
        at = found.start()
        mark = text[at]
        if mark == '"':
            _, at = _SCALAR.raw_decode(text, at)
            continue
        if mark in "{[":
            depth += 1
        elif depth == 0:
            return at
        elif mark != ",":
            depth -= 1
        at += 1
    return len(text)
