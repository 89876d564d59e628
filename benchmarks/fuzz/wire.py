"""The fuzz's stdio transport: the server as a child process, for the real MCP client, with
each message written as any client may write it, and a way past the client for what even
its session cannot send.

The SDK's stdio client writes messages with pydantic, which refuses a lone surrogate
(``\\ud800``: half of a UTF-16 pair, which JavaScript strings hold and ``JSON.stringify``
writes escaped), and its session turns every request into plain data first, which stops
at 254 levels of nesting. Here messages are written by :func:`json_text`, escaped as
``json.dumps`` escapes and at any depth; :meth:`JsonStdio.call_raw` sends a request the
session cannot make (1,000 levels) and waits for its answer. Everything else is the SDK's:
the session, and the parsing of what the server writes back.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import Process
from mcp import StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCResponse, jsonrpc_message_adapter

__all__ = ["JsonStdio", "json_text"]

# Seconds the server may take to exit once its stdin closes, before it is killed.
_EXIT_WITHIN = 20.0
_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError)


class _Raw(str):
    """Text :func:`json_text` writes as it is (brackets, separators)."""


def json_text(value: object) -> str:
    """``value`` as one line of JSON: lone surrogates escaped (``\\ud800``), nested as deep
    as it is (a loop over a stack, not recursion)."""
    parts: list[str] = []
    todo: list[object] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, _Raw):
            parts.append(item)
            continue
        if isinstance(item, dict):
            pairs = [(_Raw(json.dumps(str(key)) + ":"), inner) for key, inner in item.items()]
            todo += _opened("{", pairs, "}")
        elif isinstance(item, list | tuple):
            todo += _opened("[", [(_Raw(""), inner) for inner in item], "]")
        else:
            parts.append(json.dumps(item))
    return "".join(parts)


def _opened(start: str, entries: list[tuple[_Raw, object]], end: str) -> list[object]:
    """What to push for a container: popped, it writes ``start``, the entries with their
    separators, then ``end``."""
    pushed: list[object] = [_Raw(end)]
    for position in range(len(entries) - 1, -1, -1):
        prefix, inner = entries[position]
        pushed += [inner, _Raw(("," if position else "") + prefix)]
    return [*pushed, _Raw(start)]


@dataclass
class _Waiter:
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None


class JsonStdio:
    """The server ``params`` start, over its stdin and stdout (its stderr is ours): a
    transport for ``mcp.Client``. On exit its stdin closes and it is given
    :data:`_EXIT_WITHIN` seconds to exit before it is killed."""

    def __init__(self, params: StdioServerParameters) -> None:
        self.params = params
        self._stack = AsyncExitStack()
        self._process: Process | None = None
        self._lock = anyio.Lock()  # one line at a time on the server's stdin
        self._waiting: dict[str, _Waiter] = {}

    async def __aenter__(self) -> TransportStreams:
        return await self._stack.enter_async_context(self._connected())

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return await self._stack.__aexit__(kind, error, traceback)

    async def call_raw(self, message: dict[str, Any], within: float) -> dict[str, Any] | None:
        """Send ``message``, a request with a string id no session uses, past the session;
        the server's answer to it, or ``None`` when none came within ``within`` seconds."""
        waiter = self._waiting[str(message["id"])] = _Waiter()
        try:
            await self._send(json_text(message))
            with anyio.move_on_after(within):
                await waiter.done.wait()
            return waiter.answer
        finally:
            del self._waiting[str(message["id"])]

    async def _send(self, line: str) -> None:
        assert self._process is not None and self._process.stdin is not None
        async with self._lock:
            await self._process.stdin.send(line.encode("ascii") + b"\n")

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[TransportStreams]:
        command = [self.params.command, *self.params.args]
        process = await anyio.open_process(
            command, env=self.params.env, cwd=self.params.cwd, stderr=None
        )
        self._process = process
        read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)

        async def from_server() -> None:
            assert process.stdout is not None
            rest = b""
            with contextlib.suppress(*_GONE):
                async with read_in:
                    async for chunk in process.stdout:
                        *lines, rest = (rest + chunk).split(b"\n")
                        for line in filter(bytes.strip, lines):
                            parsed = _parsed(line)
                            if not self._answered_raw(parsed, line):
                                await read_in.send(parsed)

        async def to_server() -> None:
            with contextlib.suppress(*_GONE):
                async with write_out:
                    async for item in write_out:
                        message = item.message.model_dump(by_alias=True, exclude_unset=True)
                        await self._send(json_text(message))

        async with anyio.create_task_group() as group:
            group.start_soon(from_server)
            group.start_soon(to_server)
            try:
                yield read_out, write_in
            finally:
                with anyio.CancelScope(shield=True):
                    write_in.close()
                    read_out.close()
                    if process.stdin is not None:
                        await process.stdin.aclose()
                    with anyio.move_on_after(_EXIT_WITHIN):
                        await process.wait()
                    if process.returncode is None:
                        process.kill()
                    await process.aclose()
                group.cancel_scope.cancel()

    def _answered_raw(self, parsed: SessionMessage | Exception, line: bytes) -> bool:
        """Whether ``line`` answers a :meth:`call_raw` (then it is handed there)."""
        if isinstance(parsed, Exception):
            return False
        message = parsed.message
        if not isinstance(message, JSONRPCResponse | JSONRPCError):
            return False
        waiter = self._waiting.get(str(message.id))
        if waiter is None:
            return False
        waiter.answer = json.loads(line)
        waiter.done.set()
        return True


def _parsed(line: bytes) -> SessionMessage | Exception:
    """A line the server wrote, as the SDK's stdio client reads one."""
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc
