"""Streamable HTTP: every namespace behind one port, with a bearer token and limits.

``/mcp`` serves the ``default`` namespace and ``/ns/<name>/mcp`` namespace ``name``, so any
MCP client that takes a URL can choose one. Each namespace gets its own MCP server, engine
and session manager, started on its first request (the default one at start, so a store
another process writes is refused before the port opens); they share the embedding model.
A session lives in one namespace's manager, so its id means nothing in another.

In front of every namespace, in order: the bearer token (401, or 403 for a namespace the
token does not grant), the per-client rate limit and the bound on calls in flight, one
for reads and one for writes (a call waits a moment for a slot, then 429 with a
``Retry-After`` spread at random), then the SDK's Host/Origin check, which stays on for
every bind.
The memory console (``server/console``) answers at ``/console`` on the same port, behind
the same tokens and the same Host/Origin check.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from ralph_context import namespaces
from ralph_context._logging import get_logger
from ralph_context.config import EmbeddingsSettings, ServerSettings, Settings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.engine import Engine
from ralph_context.server.admission import is_write
from ralph_context.server.agents.events import AgentEvents
from ralph_context.server.agents.route import hook_routes
from ralph_context.server.app import ContextServer, serving
from ralph_context.server.console import console_routes
from ralph_context.server.guard import NO_TOKEN
from ralph_context.server.import_route import import_routes
from ralph_context.server.limits import InFlight, RateLimiter, retry_after
from ralph_context.server.replica_route import replica_routes
from ralph_context.server.tokens import TokenBook

__all__ = ["LOOPBACK", "SharedModel", "Spaces", "build_app", "security_for"]

log = get_logger("ralph_context.server")

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class SharedModel:
    """One embedding model for every namespace's engine: loaded by the first, reused by
    the rest (a failed load is not kept, so a later engine tries again)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: LocalEmbedder | None = None

    def __call__(self, settings: EmbeddingsSettings) -> LocalEmbedder:
        with self._lock:
            if self._model is None:
                self._model = load_embedder(settings)
            return self._model


@dataclass
class _Space:
    """One namespace being served: ready once its engine answers (or failed to start)."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    manager: StreamableHTTPSessionManager | None = None
    server: ContextServer | None = None
    engine: Engine | None = None
    error: BaseException | None = None


class Spaces:
    """The namespaces this server has opened, each started once, on first use.

    Args:
        settings: The server's settings; each namespace's are these with its name.
        group: Where each namespace's engine and session manager run until ``close``.
        read_only: Serve without write tools, the store opened read-only.
    """

    def __init__(self, settings: Settings, group: TaskGroup, *, read_only: bool = False) -> None:
        self.settings = settings
        self.group = group
        self.read_only = read_only
        self.model = SharedModel()
        self.security = security_for(settings.server)
        self._spaces: dict[str, _Space] = {}
        self._agents: dict[str, AgentEvents] = {}
        self._closing = anyio.Event()

    async def get(self, name: str) -> _Space:
        """Namespace ``name``, started if it was not (waits until its engine answers).

        Raises:
            RuntimeError: ``server.max_namespaces`` are open already.
        """
        space = self._spaces.get(name)
        if space is None:
            if len(self._spaces) >= self.settings.server.max_namespaces:
                raise RuntimeError(
                    f"this server holds {len(self._spaces)} namespaces already "
                    f"(server.max_namespaces); {name!r} was not opened"
                )
            space = self._spaces[name] = _Space()
            self.group.start_soon(self._serve, name, space)
        await space.ready.wait()
        return space

    async def engine(self, name: str) -> Engine:
        """Namespace ``name``'s engine, started if it was not (the console's way in).

        Raises:
            RuntimeError: Too many namespaces are open, or this one could not be opened.
        """
        space = await self.get(name)
        if space.engine is None:
            raise RuntimeError(f"namespace {name!r} could not be opened: {space.error}")
        return space.engine

    async def agents(self, name: str) -> AgentEvents:
        """Namespace ``name``'s answers to agents' hooks (one session book per namespace).

        Raises:
            RuntimeError: As :meth:`engine`.
        """
        events = self._agents.get(name)
        if events is None:
            engine = await self.engine(name)
            events = self._agents.setdefault(
                name, AgentEvents(engine, self.settings.agents, self.group)
            )
        return events

    def names(self) -> list[str]:
        """The namespaces of the store on disk and those open now."""
        found = set(self._spaces)
        if not self.settings.is_ephemeral:
            found.update(namespaces.names(self.settings.store_root()))
        return sorted(found)

    def close(self) -> None:
        self._closing.set()

    async def _serve(self, name: str, space: _Space) -> None:
        settings = self.settings.with_overrides(storage={"namespace": name})
        limits = self.settings.server
        try:
            async with serving(settings, read_only=self.read_only, model_loader=self.model) as (
                server,
                engine,
            ):
                server.streamable_http_app(
                    transport_security=self.security,
                    session_idle_timeout=limits.session_idle_minutes * 60,
                    max_sessions=limits.max_sessions,
                )
                async with server.session_manager.run():
                    space.manager, space.engine = server.session_manager, engine
                    space.server = server
                    space.ready.set()
                    log.info("namespace_opened", namespace=name)
                    await self._closing.wait()
        except Exception as exc:  # reported to every request for it, and to serve()
            space.error = exc
            log.error("namespace_failed", namespace=name, error=str(exc))
        finally:
            space.ready.set()


def security_for(server: ServerSettings) -> TransportSecuritySettings:
    """Host/Origin (DNS-rebinding) protection for every bind: loopback names, the bound
    address and this machine's names, plus ``server.allowed_hosts`` / ``allowed_origins``.
    (The SDK turns the protection off for any bind but loopback unless given this.)"""
    names = {"127.0.0.1", "localhost", "[::1]"}
    if server.host not in ("0.0.0.0", "::", ""):
        names.add(f"[{server.host}]" if ":" in server.host else server.host)
    else:
        names |= {socket.gethostname(), socket.getfqdn()}
    hosts = sorted(f"{name}:*" for name in names) + sorted(names) + list(server.allowed_hosts)
    origins = [f"http://{name}:*" for name in sorted(names)] + list(server.allowed_origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class _Endpoint:
    """The ASGI app behind ``/mcp`` and ``/ns/<name>/mcp``."""

    def __init__(
        self,
        spaces: Spaces,
        tokens: TokenBook,
        limiter: RateLimiter,
        lanes: tuple[InFlight, InFlight],
        spread: int,
    ) -> None:
        self.spaces = spaces
        self.tokens = tokens
        self.limiter = limiter
        # Calls in flight: reads, and writes apart (``admission``).
        self.reads, self.writes = lanes
        self.spread = spread

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope.get("path_params", {}).get("name", namespaces.DEFAULT)
        if not namespaces.is_name(name):
            problem = f"namespace {name!r:.80} is not allowed: use {namespaces.NAME_RULE}"
            await _refuse(scope, receive, send, 404, "bad_namespace", problem)
            return
        user = scope.get("user")
        if self.tokens.enabled:
            if not isinstance(user, AuthenticatedUser):
                await _auth_error(scope, receive, send, 401, "invalid_token", _NO_TOKEN)
                return
            if "*" not in user.scopes and name not in user.scopes:
                text = f"this token does not grant namespace {name!r}"
                await _auth_error(scope, receive, send, 403, "insufficient_scope", text)
                return
        client = user.display_name if isinstance(user, AuthenticatedUser) else _address(scope)
        wait = self.limiter.wait_for(f"{client} {_session(scope)}")
        if wait > 0:
            await _busy(scope, receive, send, wait, f"rate limit for {client} reached")
            return
        try:
            space = await self.spaces.get(name)
        except RuntimeError as exc:
            await _refuse(scope, receive, send, 503, "too_many_namespaces", str(exc))
            return
        if space.manager is None or space.server is None:
            problem = f"namespace {name!r} could not be opened: {space.error}"
            await _refuse(scope, receive, send, 503, "namespace_failed", problem)
            return
        if not _does_work(scope):
            await space.manager.handle_request(scope, receive, send)
            return
        writes, receive = await is_write(scope, receive, await space.server.write_tools())
        lane = self.writes if writes else self.reads
        if not await lane.admit():
            kind = "writes" if writes else "reads"
            text = f"the server is answering all the {kind} it can"
            await _busy(scope, receive, send, 1.0, text, spread=self.spread)
            return
        started = time.monotonic()
        try:
            await space.manager.handle_request(scope, receive, send)
        finally:
            lane.leave(time.monotonic() - started)


_NO_TOKEN = NO_TOKEN
# JSON-RPC's "server error" range: the MCP client shows a JSON-RPC error body's message
# (for any other body it shows only "Server returned an error response").
_REFUSED = -32000


async def _refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    kind: str,
    text: str,
    headers: dict[str, str] | None = None,
) -> None:
    """An HTTP refusal whose body is a JSON-RPC error, so the client shows ``text``."""
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": _REFUSED, "message": text, "data": {"reason": kind}},
    }
    await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)


async def _auth_error(
    scope: Scope, receive: Receive, send: Send, status: int, error: str, text: str
) -> None:
    challenge = f'Bearer realm="ralph-context", error="{error}", error_description="{text}"'
    await _refuse(scope, receive, send, status, error, text, {"WWW-Authenticate": challenge})


async def _busy(
    scope: Scope, receive: Receive, send: Send, wait: float, text: str, *, spread: int = 0
) -> None:
    after = retry_after(wait, spread=spread)
    message = f"{text}; retry in {after} s"
    await _refuse(scope, receive, send, 429, "too_many_requests", message, {"Retry-After": after})


def _session(scope: Scope) -> str:
    """The MCP session a request belongs to (none before ``initialize`` answers): the rate
    limit is per client session, so loops on one machine, or sharing a token, do not
    share one budget. Clients of protocol 2026-07-28 and later (the ``mcp`` 2.x client)
    open no session: their budget is their token's, or their address's."""
    for key, value in scope.get("headers", ()):
        if key == b"mcp-session-id":
            return str(value.decode("latin-1"))
    return "-"


# Requests that run the engine. Connecting (``server/discover``, ``initialize``) and
# listing are cheap, and a client refused while connecting gives up instead of retrying
# as it does after a refused call: those are never refused for load.
_WORK = {"tools/call", "resources/read", "prompts/get"}


def _does_work(scope: Scope) -> bool:
    """Whether a request counts against the bound on calls in flight: a POST naming one
    of :data:`_WORK` in ``Mcp-Method`` (protocol 2026-07-28 on); from older clients, which
    do not name it, any POST of an open session (all but ``initialize``)."""
    if scope.get("method") != "POST":
        return False
    for key, value in scope.get("headers", ()):
        if key == b"mcp-method":
            return value.decode("latin-1") in _WORK
    return _session(scope) != "-"


def _address(scope: Scope) -> str:
    client: Any = scope.get("client")
    return str(client[0]) if client else "unknown"


def _lane(limits: ServerSettings) -> InFlight:
    return InFlight(
        limits.in_flight_bound,
        limits.target_latency_ms / 1000 or None,
        floor=limits.min_in_flight,
        queue_wait=limits.queue_wait_ms / 1000,
    )


def build_app(spaces: Spaces, tokens: TokenBook) -> Starlette:
    """The Starlette app: both MCP routes, the agents' hooks (``/hooks/<client>``), the
    replicas' forwarded writes, the CLI's imports (``/transfer/import``) and the console
    (``/console``), bearer authentication when tokens are set."""
    limits = spaces.settings.server
    endpoint = _Endpoint(
        spaces,
        tokens,
        RateLimiter(limits.rate_limit_per_second, limits.rate_limit_burst),
        (_lane(limits), _lane(limits)),
        limits.retry_spread_seconds,
    )
    middleware = []
    if tokens.enabled:
        middleware.append(Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(tokens)))
    routes: list[BaseRoute] = [Route("/mcp", endpoint), Route("/ns/{name}/mcp", endpoint)]
    routes += hook_routes(spaces, tokens.enabled)
    routes += replica_routes(spaces, tokens.enabled)
    routes += import_routes(spaces, tokens.enabled)
    routes += console_routes(spaces, tokens)
    return Starlette(routes=routes, middleware=middleware)
