"""The fuzz's stdio transport: the server as a child process, for the real MCP client, with
each message written as any client may write it.

The SDK's own stdio client writes messages with pydantic, which refuses a lone surrogate
(``\\ud800``: half of a UTF-16 pair, which JavaScript strings hold and ``JSON.stringify``
writes escaped), so a fuzz through it could never send one; nor could ``json.dumps``
nest 1,000 levels (it recurses). Here messages are written by :func:`json_text`: escaped
as ``json.dumps`` escapes, at any depth. Everything else is the SDK's: the client's
session, and the parsing of what the server writes back.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp import StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

__all__ = ["json_stdio", "json_text"]

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


@asynccontextmanager
async def json_stdio(params: StdioServerParameters) -> AsyncIterator[TransportStreams]:
    """The server ``params`` start, over its stdin and stdout (its stderr is ours); for
    ``mcp.Client``. On exit its stdin closes and it is given :data:`_EXIT_WITHIN` seconds
    to exit before it is killed."""
    process = await anyio.open_process(
        [params.command, *params.args], env=params.env, cwd=params.cwd, stderr=None
    )
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
                        await read_in.send(_parsed(line))

    async def to_server() -> None:
        assert process.stdin is not None
        with contextlib.suppress(*_GONE):
            async with write_out:
                async for item in write_out:
                    message = item.message.model_dump(by_alias=True, exclude_unset=True)
                    await process.stdin.send(json_text(message).encode("ascii") + b"\n")

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


def _parsed(line: bytes) -> SessionMessage | Exception:
    """A line the server wrote, as the SDK's stdio client reads one."""
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc
