"""Which lane of the HTTP face's bound on calls in flight a request waits in: reads or
writes.

Writes queue at the store's single writer and, measured under 50 clients (issue 62),
took the slots reads needed: searches were refused because stores were slow. So each has
its own :class:`~ralph_context.server.limits.InFlight`, and a request is a write when it
calls a tool that may change the store. The tool is named by the ``Mcp-Name`` header
(protocol 2026-07-28 on); an older client's request names it only in its JSON-RPC body,
which is read here and handed on unchanged to the MCP session manager.
"""

from __future__ import annotations

import json
from collections import deque

from starlette.types import Message, Receive, Scope

__all__ = ["is_write"]

# A body larger than this is not parsed to find its tool: only ``store_contexts`` (up to
# 1,000 items) sends one, and it writes.
_PARSED_BYTES = 1 << 20


async def is_write(scope: Scope, receive: Receive, writes: frozenset[str]) -> tuple[bool, Receive]:
    """Whether the request calls one of ``writes``, and the ``receive`` to hand on (the
    body replayed when it was read to find out)."""
    for key, value in scope.get("headers", ()):
        if key == b"mcp-name":
            return value.decode("latin-1") in writes, receive
    messages: deque[Message] = deque()
    size, more = 0, True
    while more:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        more = bool(message.get("more_body", False))

    async def replay() -> Message:
        return messages.popleft() if messages else await receive()

    if size > _PARSED_BYTES:
        return True, replay
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
    return _names_a_write(body, writes), replay


def _names_a_write(body: bytes, writes: frozenset[str]) -> bool:
    try:
        request = json.loads(body)
    except ValueError:
        return False  # the session manager answers it with its own error
    calls = request if isinstance(request, list) else [request]  # a batch: any of them
    return any(_calls_a_write(call, writes) for call in calls)


def _calls_a_write(call: object, writes: frozenset[str]) -> bool:
    if not isinstance(call, dict) or call.get("method") != "tools/call":
        return False
    params = call.get("params")
    return isinstance(params, dict) and params.get("name") in writes
