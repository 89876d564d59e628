"""``POST /hooks/<client>`` (and ``/ns/<name>/hooks/<client>``): a hook's payload in,
``{"context", "action"}`` out.

Guarded as ``/mcp`` is: the bearer token and its namespaces (when the server has tokens),
the SDK's Host/Origin check (a page in a browser cannot post here: the body must be JSON,
which a cross-site form cannot send without a preflight nobody answers), and a cap on the
body. Not by ``/mcp``'s rate limit: a hook is one request per agent event, and what it
leaves behind (captures stored after the answer) is bounded per session instead
(``events.MAX_PENDING``). A payload that is not a JSON object, or a client this route does
not know, is refused with 400 and says why; a failure of the engine is a 503 whose body
names it (the hook logs it and the agent goes on without context).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.transport_security import (
    RequestBodyLimitMiddleware,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ralph_context import namespaces
from ralph_context._logging import get_logger
from ralph_context.server.guard import NO_TOKEN, GuardedEndpoint, Namespaces, refused

__all__ = ["CLIENTS", "hook_routes"]

log = get_logger("ralph_context.agents")

CLIENTS = ("claude", "codex")
MAX_BODY_BYTES = 4 << 20


class _HookEndpoint(GuardedEndpoint):
    """The ASGI app behind both hook routes; one :class:`AgentEvents` per namespace."""

    takes = "a hook's payload"

    async def answer(self, request: Request) -> Response:
        name = request.path_params.get("name", namespaces.DEFAULT)
        client = request.path_params.get("client", "")
        if client not in CLIENTS:
            return refused(404, f"client {client!r:.40} is not one of: {', '.join(CLIENTS)}")
        try:
            payload = json.loads(await request.body())
        except ValueError as exc:
            return refused(400, f"the payload is not JSON: {exc}")
        if not isinstance(payload, dict) or not isinstance(payload.get("hook_event_name"), str):
            return refused(400, "the payload must be a JSON object with a hook_event_name")
        try:
            events = await self.spaces.agents(name)
            context, action = await events.handle(client, payload)
        except Exception as exc:  # the hook logs it; the agent goes on without context
            log.warning("agent_hook_failed", client=client, error=f"{type(exc).__name__}: {exc}")
            return refused(503, f"{type(exc).__name__}: {exc}")
        return JSONResponse({"context": context, "action": action})


def hook_routes(spaces: Namespaces, tokens_enabled: bool) -> list[BaseRoute]:
    """The hook routes for ``spaces`` (``guard.Namespaces``)."""
    endpoint = RequestBodyLimitMiddleware(_HookEndpoint(spaces, tokens_enabled), MAX_BODY_BYTES)
    return [
        Route("/hooks/{client}", endpoint),
        Route("/ns/{name}/hooks/{client}", endpoint),
        Route("/agents/alive", _alive(tokens_enabled), methods=["GET"]),
    ]


def _alive(tokens_enabled: bool) -> Callable[[Request], Awaitable[Response]]:
    """What a bridge calls now and then: a request, so an agent's open MCP entry keeps the
    project's server from its idle exit (``daemon``); with tokens, only with one (another
    local user cannot keep the owner's server up)."""

    async def alive(request: Request) -> Response:
        if tokens_enabled and not isinstance(request.scope.get("user"), AuthenticatedUser):
            return refused(401, NO_TOKEN)
        return Response(status_code=204)

    return alive
