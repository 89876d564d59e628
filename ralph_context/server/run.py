"""Serving the MCP server over stdio (default), streamable HTTP or SSE.

One engine serves every connection: it is started here, around the transport, not per
session. Over stdio the SDK points file descriptor 1 at stderr while serving, and our logs go
to stderr anyway, so stdout carries only the protocol. Over HTTP uvicorn runs without its own
logging set-up (its records join ours on stderr) and without an access log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import anyio
import uvicorn
from starlette.applications import Starlette

from ralph_context.config import Settings
from ralph_context.engine import Engine
from ralph_context.server.app import EngineHolder, build_server
from ralph_context.storage import writer_lock

__all__ = ["Transport", "serve"]

Transport = Literal["stdio", "http", "sse"]


async def serve(
    settings: Settings,
    *,
    transport: Transport | None = None,
    host: str | None = None,
    port: int | None = None,
) -> None:
    """Serve until the client disconnects (stdio) or the process is interrupted (HTTP).

    Raises:
        ConfigError: Invalid custom prompts.
        ModelMismatch: The store was built with another embedding model.
        StoreLocked: Another process writes the store.
    """
    chosen = transport or settings.server.transport
    bind = host or settings.server.host
    number = port or settings.server.port
    holder = EngineHolder(settings)
    server = build_server(holder)
    async with Engine(settings) as engine:
        holder.engine = engine
        if chosen == "stdio":
            await server.run_stdio_async()
            return
        app = (
            server.streamable_http_app(host=bind) if chosen == "http" else server.sse_app(host=bind)
        )
        path = "/mcp" if chosen == "http" else "/sse"
        store = None if settings.is_ephemeral else settings.store_path()
        await _uvicorn(app, bind, number, store, path)


async def _uvicorn(app: Starlette, host: str, port: int, store: Path | None, path: str) -> None:
    """Serve ``app``; once it listens, the store's writer note names its URL, so another
    process that wants the store (the Ralph plugin) connects here instead of opening it."""
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False)
    server = uvicorn.Server(config)

    async def advertise() -> None:
        while not server.started:
            if server.should_exit:
                return
            await anyio.sleep(0.05)
        if store is not None:
            writer_lock.advertise(store, f"http://{_reachable(host)}:{_port(server, port)}{path}")

    async with anyio.create_task_group() as group:
        group.start_soon(advertise)
        await server.serve()
        group.cancel_scope.cancel()


def _reachable(host: str) -> str:
    """An address a local client can dial for ``host``: a wildcard bind answers on loopback."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _port(server: uvicorn.Server, asked: int) -> int:
    """The port bound (``asked`` unless it was 0: the OS picked one)."""
    for listener in getattr(server, "servers", []):
        for sock in listener.sockets:
            return int(sock.getsockname()[1])
    return asked
