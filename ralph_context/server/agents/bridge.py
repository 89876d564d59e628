"""``ralph-context serve --shared``: an MCP server over stdio that is the project's shared
server (``daemon``), reached over HTTP.

An agent starts its MCP servers as child processes over stdio, and the store has one
writer: had the agent's MCP entry opened the store itself, the server its hooks start
would be refused (or would refuse it). So the entry ``init --agent`` registers is this
bridge: it finds the project's server (starting it when none runs, as a hook does, and
waiting for it), then relays every message between the agent's stdio and the server's
streamable HTTP endpoint, unchanged; while the agent keeps it open, it tells the server
now and then that it is still there (the server exits only when no one is). The agent
sees one MCP server; hooks, the MCP entry and any number of agent sessions share one
engine, one model, one writer.
"""

from __future__ import annotations

import contextlib
import http.client
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.shared._stream_protocols import ReadStream, WriteStream

from ralph_context.server.agents.project import (
    ServerNote,
    bearer_token,
    project_root,
    read_server,
    start_server,
)

__all__ = ["bridge_stdio", "wait_for_server"]

# A first start loads the model and opens the store: seconds, more on a busy machine.
START_TIMEOUT = 120.0
# Seconds between the bridge's "still here": far below any sensible idle exit.
KEEP_ALIVE = 60.0
_POLL = 0.2


def bridge_stdio(cwd: Path) -> int:
    """Relay stdio to the project's shared server until stdin closes; the exit code."""
    root = project_root(cwd)
    note = wait_for_server(root, START_TIMEOUT)
    if note is None:
        sys.stderr.write(
            f"ralph-context: the project's shared server did not start within "
            f"{START_TIMEOUT:.0f} s; see {root / '.agent' / 'agent-server.log'}\n"
        )
        return 1
    sys.stderr.write(f"ralph-context: stdio bridged to {note.base_url}{note.mcp_path}\n")
    anyio.run(_relay, note)
    return 0


def wait_for_server(root: Path, timeout: float) -> ServerNote | None:
    """The project's server once it answers (started if none does), or ``None``."""
    deadline = time.monotonic() + timeout
    started = False
    while time.monotonic() < deadline:
        note = read_server(root)
        if note is not None and _answers(note):
            return note
        if not started:
            started = start_server(root) or True
        time.sleep(_POLL)
    return None


def _answers(note: ServerNote) -> bool:
    """Whether something listens at the note's address."""
    host, _, port = note.base_url.removeprefix("http://").partition(":")
    try:
        connection = http.client.HTTPConnection(host, int(port or 80), timeout=1.0)
        connection.connect()
        connection.close()
        return True
    except (OSError, ValueError):
        return False


async def _relay(note: ServerNote) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from ralph_context.server.stdio import answered_stdio

    token = bearer_token(note)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    url = f"{note.base_url}{note.mcp_path}"
    async with (
        create_mcp_http_client(headers) as http,
        answered_stdio() as (from_agent, to_agent),
        streamable_http_client(url, http_client=http) as (from_server, to_server),
        anyio.create_task_group() as group,
    ):

        async def pump(source: ReadStream[Any], sink: WriteStream[Any]) -> None:
            # The sink is closed however the pump ends: the stdio side's writer (and the
            # HTTP client's) waits for its stream to close before the bridge may exit, and
            # with no message relayed nobody else closes it (the bridge hung on an empty
            # stdin).
            try:
                async for message in source:
                    if isinstance(message, Exception):
                        sys.stderr.write(f"ralph-context: bridge: {message}\n")
                        continue
                    await sink.send(message)
            finally:
                await sink.aclose()
            group.cancel_scope.cancel()

        async def keep_alive() -> None:
            while True:
                await anyio.sleep(KEEP_ALIVE)
                with contextlib.suppress(Exception):  # the relay reports a gone server
                    await http.get(f"{note.base_url}/agents/alive")

        group.start_soon(pump, from_agent, to_server)
        group.start_soon(pump, from_server, to_agent)
        group.start_soon(keep_alive)
