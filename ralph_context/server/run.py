"""Serving the MCP server over stdio (default), streamable HTTP or SSE.

One engine serves every connection: it is started here, around the transport, not per
session. Over stdio the SDK points file descriptor 1 at stderr while serving, and our logs go
to stderr anyway, so stdout carries only the protocol. Over HTTP uvicorn runs without its own
logging set-up (its records join ours on stderr) and without an access log.
"""

from __future__ import annotations

from typing import Literal

import uvicorn
from starlette.applications import Starlette

from ralph_context.config import Settings
from ralph_context.engine import Engine
from ralph_context.server.app import EngineHolder, build_server

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
        elif chosen == "http":
            await _uvicorn(server.streamable_http_app(host=bind), bind, number)
        else:
            await _uvicorn(server.sse_app(host=bind), bind, number)


async def _uvicorn(app: Starlette, host: str, port: int) -> None:
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False)
    await uvicorn.Server(config).serve()
