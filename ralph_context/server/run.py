"""Serving the MCP server over stdio (default), streamable HTTP or SSE.

One engine per namespace serves every connection: started here (HTTP: see ``http``),
around the transport, not per session. Over stdio the SDK points file descriptor 1 at
stderr while serving, and our logs go to stderr anyway, so stdout carries only the
protocol; every line read there is answered (``stdio``). Over HTTP uvicorn runs without
its own logging set-up (its records join ours on stderr) and without an access log.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp

from ralph_context import namespaces
from ralph_context._logging import get_logger
from ralph_context.config import Settings, owner_token
from ralph_context.engine import Engine
from ralph_context.errors import ConfigError
from ralph_context.object_location import Location
from ralph_context.server.agents import daemon
from ralph_context.server.agents.project import forget_server
from ralph_context.server.app import serving
from ralph_context.server.console import PREFIX
from ralph_context.server.guard import bearer_only
from ralph_context.server.http import LOOPBACK, Spaces, build_app
from ralph_context.server.interrupt import Interrupt, interruptible, until
from ralph_context.server.stdio import serve_stdio
from ralph_context.server.tokens import TokenBook
from ralph_context.storage import writer_lock

__all__ = ["Transport", "serve"]

log = get_logger("ralph_context.server")

Transport = Literal["stdio", "http", "sse"]


async def serve(
    settings: Settings,
    *,
    transport: Transport | None = None,
    host: str | None = None,
    port: int | None = None,
    read_only: bool = False,
    on_console: Callable[[str], object] | None = None,
    agents_root: Path | None = None,
) -> None:
    """Serve until the client disconnects (stdio), or Ctrl-C or SIGTERM stops it
    (``interrupt``: it says so, and closes the engine).

    Over stdio the namespace is ``storage.namespace``; over HTTP every namespace is served
    (``/mcp`` is ``default``, ``/ns/<name>/mcp`` the others) and the console at
    ``/console``. ``read_only``: no write tools, the store opened without its writer lock.
    ``on_console``: called (in a worker thread) with the console's URL once the HTTP server
    listens (``ralph-context console`` opens a browser there). ``agents_root``: serve as the
    shared server of that project's agents (``server.agents.daemon``): over HTTP on a
    loopback port the OS picks, advertised to its hooks, stopping when idle.

    Raises:
        ConfigError: Invalid custom prompts or tokens; a bind beyond loopback without a
            token.
        ModelMismatch: The store was built with another embedding model.
        StoreLocked: Another process writes the store.
    """

    async def work(interrupt: Interrupt) -> None:
        await _serve(
            settings, transport, host, port, read_only, on_console, agents_root, interrupt.stop
        )

    await interruptible(work)


async def _serve(
    settings: Settings,
    transport: Transport | None,
    host: str | None,
    port: int | None,
    read_only: bool,
    on_console: Callable[[str], object] | None,
    agents_root: Path | None,
    stop: anyio.Event,
) -> None:
    chosen = transport or settings.server.transport
    bind = host or settings.server.host
    number = port or settings.server.port
    if agents_root is not None:
        chosen, bind, number = "http", "127.0.0.1", 0
    if chosen == "stdio":
        async with serving(settings, read_only=read_only) as (server, engine):
            facts = _facts(engine)
            log.info("serving", transport="stdio", **facts)
            _say(f"stdio: waiting for an MCP client ({_listed(facts)})")
            await until(stop, lambda: serve_stdio(server))
        return
    overrides: dict[str, object] = {"host": bind}
    if number:  # 0: a port the OS picks (the agents' server), which settings do not take
        overrides["port"] = number
    settings = settings.with_overrides(server=overrides)
    if settings.storage.on_object_storage and number and settings.storage.replica_url is None:
        # Where the other replicas send their writes while this one holds the lease.
        replica_url = f"http://{_reachable(bind)}:{number}"
        settings = settings.with_overrides(storage={"replica_url": replica_url})
    configured = TokenBook.load(settings.token_path())
    if bind not in LOOPBACK and not configured.enabled:
        raise ConfigError(_OPEN_BIND.format(host=bind))
    tokens = _with_owner(settings)
    store = None if settings.is_ephemeral else settings.store_root()
    if chosen == "sse":
        await _serve_sse(settings, bind, number, store, tokens, read_only, stop)
        return
    async with anyio.create_task_group() as group:
        spaces = Spaces(settings, group, read_only=read_only)
        default = await spaces.get(namespaces.DEFAULT)
        refused = default.error
        if refused is not None:
            spaces.close()
        else:
            auth = _auth(tokens)
            facts = _facts(default.engine) if default.engine is not None else {}
            log.info("serving", transport="http", auth=auth, read_only=read_only, **facts)
            described = _listed({**facts, "auth": auth, "other namespaces": "/ns/NAME/mcp"})
            try:
                app = build_app(spaces, tokens)
                if agents_root is None:
                    await _uvicorn(
                        app, bind, number, store, "/mcp", described, on_console, stops=(stop,)
                    )
                else:
                    await _serve_agents(agents_root, settings, spaces, app, store, described, stop)
            finally:
                spaces.close()
    # Raised outside the task group, which would wrap it in an ExceptionGroup: the CLI then
    # printed a 280-line traceback instead of its one-line refusal (a held store, say).
    if refused is not None:
        if agents_root is not None and _served_elsewhere(agents_root, settings, store):
            return
        raise refused


def _with_owner(settings: Settings) -> TokenBook:
    """The tokens this HTTP server takes: the configured ones and, unless
    ``server.owner_token`` is off, the store's owner token (created on the first start;
    ``config.owner_token``).

    Raises:
        ConfigError: A token file is unsafe or malformed.
    """
    owner = owner_token.ensure(settings.owner_token_path()) if settings.server.owner_token else None
    return TokenBook.load(settings.token_path(), owner=owner)


def _auth(tokens: TokenBook) -> str:
    if not tokens.enabled:
        return "none (loopback: every local user)"
    others = len(tokens.grants) - (tokens.owner_digest is not None)
    if tokens.owner_digest is None:
        return f"bearer token ({others})"
    return "owner token" + (f" and {others} more" if others else "")


def _served_elsewhere(root: Path, settings: Settings, store: Location | None) -> bool:
    """Whether another process writes the store and serves it over HTTP; if so, the
    project's agents are pointed at it."""
    found = None if store is None else writer_lock.other_writer(store)
    if found is None or not found.endpoint:
        return False
    daemon.advertise(root, found.endpoint, settings, found.pid)
    _say(f"the store is served by process {found.pid} at {found.endpoint}: agents use it")
    return True


async def _serve_agents(
    root: Path,
    settings: Settings,
    spaces: Spaces,
    app: Starlette,
    store: Location | None,
    described: str,
    interrupted: anyio.Event,
) -> None:
    """Serve ``app`` for ``root``'s agents until idle (``server.agents.daemon``) or
    ``interrupted``."""
    pid = os.getpid()

    async def take_spool() -> None:
        await daemon.ingest_spool(root, await spaces.agents(settings.storage.namespace))

    spool_first = daemon.SpoolFirst(app, take_spool)
    activity = daemon.Activity(spool_first, on_shutdown=lambda: forget_server(root, pid))
    stop = anyio.Event()

    async def listening(url: str) -> None:
        daemon.advertise(root, url, settings)
        try:
            await take_spool()
        finally:
            spool_first.taken.set()
        # A hook that found no note a moment before it was written spools after this;
        # the next hook takes it, or this, if no hook comes.
        await anyio.sleep(daemon.SPOOL_AGAIN)
        await take_spool()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(daemon.watch_idle, activity, settings.agents.idle_exit_minutes, stop)
            await _uvicorn(
                activity,
                "127.0.0.1",
                0,
                store,
                "/mcp",
                described,
                stops=(stop, interrupted),
                on_listen=listening,
            )
            group.cancel_scope.cancel()
    finally:
        forget_server(root, pid)


_OPEN_BIND = (
    "refusing to serve on {host} without a token: anyone who can reach it could read and "
    "change the store. Create one with `ralph-context token new` (it writes the token "
    "file server.token_file names, mode 0600, which the server reads at start) or set "
    "RALPH_CONTEXT_TOKEN; or bind to 127.0.0.1"
)


async def _serve_sse(
    settings: Settings,
    bind: str,
    port: int,
    store: Location | None,
    tokens: TokenBook,
    read_only: bool,
    stop: anyio.Event,
) -> None:
    """The deprecated SSE transport: the default namespace, behind the same tokens (every
    request: the event stream and its message posts)."""
    async with serving(settings, read_only=read_only) as (server, _engine):
        app = bearer_only(server.sse_app(host=bind), tokens)
        described = f"deprecated SSE, {_auth(tokens)}"
        await _uvicorn(app, bind, port, store, "/sse", described, stops=(stop,))


def _facts(engine: Engine) -> dict[str, str]:
    health = engine.health()
    return {"store": health.store, "model": health.model_id or "none", "tier": health.tier.value}


def _say(text: str) -> None:
    """One plain line on stderr whatever the log level (stdout is the protocol's)."""
    sys.stderr.write(f"ralph-context: {text}\n")
    sys.stderr.flush()


def _listed(facts: dict[str, str]) -> str:
    return ", ".join(f"{key} {value}" for key, value in facts.items())


async def _uvicorn(
    app: ASGIApp,
    host: str,
    port: int,
    store: Location | None,
    path: str,
    described: str,
    on_console: Callable[[str], object] | None = None,
    *,
    stops: tuple[anyio.Event, ...] = (),
    on_listen: Callable[[str], Awaitable[None]] | None = None,
) -> None:
    """Serve ``app``; once it listens, say so, and the store's writer note names its URL, so
    another process that wants the store (the Ralph plugin) connects here instead of
    opening it. Over streamable HTTP the console's URL is said too (and handed to
    ``on_console``). ``on_listen`` is awaited with the URL once it listens; any of ``stops``,
    once set, ends the server (open streams get :data:`_GRACE` seconds)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=_GRACE,
    )
    server = _Server(config)

    async def advertise() -> None:
        while not server.started:
            if server.should_exit:
                return
            await anyio.sleep(0.05)
        url = f"http://{_reachable(host)}:{_port(server, port)}{path}"
        _say(f"serving {url} ({described})")
        if store is not None:
            writer_lock.advertise(store, url)
        if on_listen is not None:
            await on_listen(url)
        if path == "/mcp":
            console = url.removesuffix(path) + PREFIX
            _say(f"console {console}")
            if on_console is not None:
                # webbrowser.open may wait for the browser it starts: not on the event loop.
                await anyio.to_thread.run_sync(on_console, console)

    async def stopping(event: anyio.Event) -> None:
        await event.wait()
        server.should_exit = True

    async with anyio.create_task_group() as group:
        group.start_soon(advertise)
        for stop in stops:
            group.start_soon(stopping, stop)
        await server.serve()
        group.cancel_scope.cancel()


# Seconds open connections (an event stream) get to finish once the server is stopped.
_GRACE = 1


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handlers: ``serve`` watches SIGINT and
    SIGTERM (``interrupt``), and uvicorn's raised the signal again once it had stopped."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


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
