"""The project's shared server for agents (``ralph-context serve --for-agents``): started
detached by the first hook that finds none, shared by every later hook and by the agent's
MCP entry (``serve --shared`` bridges to it), gone after ``agents.idle_exit_minutes``
without a request.

What it adds to an ordinary HTTP server (``server.run``): it listens on a loopback port
the OS picks and advertises it in the project's ``agent-server.json`` (``project``);
stores what hooks spooled while it was starting; counts requests (an open MCP stream
counts as one in flight, so the agent's MCP entry keeps it alive) and stops when idle;
removes its note when it ends. When another process already writes the store and serves
it over HTTP, the note points there and this one exits: one writer, one server.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ralph_context import namespaces
from ralph_context._logging import get_logger
from ralph_context.config import Settings
from ralph_context.engine.replay import replayed_since
from ralph_context.errors import ItemForgotten
from ralph_context.server.agents.events import AgentEvents
from ralph_context.server.agents.project import (
    ServerNote,
    take_spool,
    token_files,
    write_server,
)

__all__ = ["Activity", "SpoolFirst", "advertise", "ingest_spool", "watch_idle"]

log = get_logger("ralph_context.agents")

# How often the idle check looks (seconds): an idle exit is late by at most this.
_IDLE_CHECK = 5.0
# Seconds after it is advertised that the server takes the spool a second time.
SPOOL_AGAIN = 5.0
# Longest a hook waits for the spool to be stored before it is answered anyway.
SPOOL_WAIT = 30.0


class Activity:
    """ASGI middleware counting requests in flight and when the last one ended; it calls
    ``on_shutdown`` when the server begins to shut down (uvicorn re-raises a SIGTERM once
    it has served its last request, so code after ``serve()`` never runs then)."""

    def __init__(self, app: ASGIApp, on_shutdown: Callable[[], object] | None = None) -> None:
        self.app = app
        self.on_shutdown = on_shutdown
        self.in_flight = 0
        self.last = time.monotonic()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._watching(receive), send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.last = time.monotonic()

    def _watching(self, receive: Receive) -> Receive:
        async def watched() -> Message:
            message = await receive()
            if message.get("type") == "lifespan.shutdown" and self.on_shutdown is not None:
                self.on_shutdown()
            return message

        return watched

    def idle_for(self) -> float:
        """Seconds since the last request ended, 0 while one is in flight."""
        return 0.0 if self.in_flight else time.monotonic() - self.last


class SpoolFirst:
    """ASGI middleware storing what hooks spooled before it passes a hook on: what they
    spooled while no server answered happened before the hooks that reach it, so it is
    stored first. Without it a session's fix could be answered before its spooled failure
    was stored, and the fix was not linked to it (seen as a flaky agent test on CI).

    A hook waits until :attr:`taken` is set (the first take, once the engine is up), then
    ``take`` runs again (one at a time): a hook that found no note a moment before the
    server wrote it spools after that first take. With no spool a take costs one failed
    rename. Other requests pass at once; a hook waits at most ``SPOOL_WAIT`` seconds.
    """

    def __init__(self, app: ASGIApp, take: Callable[[], Awaitable[object]]) -> None:
        self.app = app
        self.take = take
        self.taken = anyio.Event()
        self._one_at_a_time = anyio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "/hooks/" in scope.get("path", ""):
            with anyio.move_on_after(SPOOL_WAIT):
                await self.taken.wait()
                async with self._one_at_a_time:
                    try:
                        await self.take()
                    except Exception as exc:  # the hook is answered (or refused) anyway
                        log.warning("spool_not_taken", error=f"{type(exc).__name__}: {exc}")
        await self.app(scope, receive, send)


def advertise(root: Path, mcp_url: str, settings: Settings, pid: int | None = None) -> ServerNote:
    """Write the project's note for the server whose default namespace answers at
    ``mcp_url``, naming the project's namespace; ``pid``: the server's process, when it is
    another one (default: this one)."""
    url = urlsplit(namespaces.endpoint(mcp_url, settings.storage.namespace))
    owner, token_file = token_files(settings)
    note = ServerNote(
        base_url=f"{url.scheme}://{url.netloc}",
        mcp_path=url.path,
        pid=os.getpid() if pid is None else pid,
        token_file=token_file,
        owner_token=owner,
    )
    write_server(root, note)
    return note


async def ingest_spool(root: Path, events: AgentEvents) -> int:
    """Store what hooks kept while no server answered; how many payloads were taken. What
    a forget since the capture deleted is not stored again (``engine.items``)."""
    taken = take_spool(root)
    for client, payload, spooled_at in taken:
        try:
            # A capture made before a forget brings nothing back that it deleted.
            with replayed_since(spooled_at):
                await events.handle(client or "claude", payload)
        except ItemForgotten as exc:
            log.info("spooled_capture_forgotten", reason=str(exc))
        except Exception as exc:  # one bad payload does not stop the others
            log.warning("spooled_hook_failed", error=f"{type(exc).__name__}: {exc}")
    if taken:
        log.info("spool_ingested", payloads=len(taken))
    return len(taken)


async def watch_idle(activity: Activity, minutes: float, stop: anyio.Event) -> None:
    """Set ``stop`` once no request has come for ``minutes``."""
    limit = minutes * 60
    while not stop.is_set():
        await anyio.sleep(min(_IDLE_CHECK, limit))
        if activity.idle_for() >= limit:
            log.info("idle_exit", minutes=minutes)
            stop.set()
