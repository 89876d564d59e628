"""The checks every JSON route beside ``/mcp`` makes before it reads a body (the agents'
hooks, the replicas' forwarded writes): a POST, the SDK's Host/Origin check (a page in a
browser cannot post here: the body must be JSON, which a cross-site form cannot send
without a preflight nobody answers), a namespace name, and when the server has tokens
the bearer token and its namespaces. :func:`bearer_only` puts the token check alone in
front of an app that has none of its own (the deprecated SSE transport)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ralph_context import namespaces
from ralph_context.config.token_file import EVERY

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

    from ralph_context.engine import Engine
    from ralph_context.server.agents.events import AgentEvents
    from ralph_context.server.tokens import TokenBook

__all__ = ["NO_TOKEN", "GuardedEndpoint", "Namespaces", "bearer_only", "refusal", "refused"]

NO_TOKEN = "this server needs 'Authorization: Bearer <token>'"


class Namespaces(Protocol):
    """What a route beside ``/mcp`` asks of the server's namespaces (``server.http.Spaces``
    is the one): named here, below ``http``, which builds the routes from their modules, so
    those never import ``http`` back."""

    security: TransportSecuritySettings
    read_only: bool

    async def engine(self, name: str) -> Engine:
        """Namespace ``name``'s engine, started if it was not."""
        ...

    async def agents(self, name: str) -> AgentEvents:
        """Namespace ``name``'s answers to the agents' hooks."""
        ...


def refused(status: int, text: str) -> Response:
    """An error answer: ``{"error": text}``."""
    return JSONResponse({"error": text}, status_code=status)


async def refusal(
    request: Request, security: TransportSecurityMiddleware, tokens_enabled: bool, what: str
) -> Response | None:
    """Why ``request`` is refused before its body is read (``None``: it is not);
    ``what``: what the route takes, for a request that is not a POST."""
    if request.method != "POST":
        return refused(405, f"POST {what} here")
    blocked = await security.validate_request(request, is_post=True)
    if blocked is not None:
        return blocked
    name = request.path_params.get("name", namespaces.DEFAULT)
    if not namespaces.is_name(name):
        return refused(404, f"namespace {name!r:.80} is not allowed: {namespaces.NAME_RULE}")
    if tokens_enabled:
        user = request.scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            return refused(401, NO_TOKEN)
        if EVERY not in user.scopes and name not in user.scopes:
            return refused(403, f"this token does not grant namespace {name!r}")
    return None


class GuardedEndpoint:
    """An ASGI app answering one JSON route for every namespace of ``spaces``: a request
    :func:`refusal` lets through is answered by :meth:`answer`."""

    # What the route takes, for the refusal of a request that is not a POST.
    takes = "JSON"

    def __init__(self, spaces: Namespaces, tokens_enabled: bool) -> None:
        self.spaces = spaces
        self.tokens_enabled = tokens_enabled
        self.security = TransportSecurityMiddleware(spaces.security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        blocked = await refusal(request, self.security, self.tokens_enabled, self.takes)
        response = blocked if blocked is not None else await self.answer(request)
        await response(scope, receive, send)

    async def answer(self, request: Request) -> Response:
        raise NotImplementedError


def bearer_only(app: ASGIApp, tokens: TokenBook) -> ASGIApp:
    """``app`` answering only HTTP requests that carry one of ``tokens`` (``app`` itself
    when there are none); others get 401 with a ``WWW-Authenticate`` challenge."""
    if not tokens.enabled:
        return app

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers", ())).get(b"authorization", b"")
            scheme, _, token = header.decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or tokens.verify(token.strip()) is None:
                answer = refused(401, NO_TOKEN)
                answer.headers["WWW-Authenticate"] = 'Bearer realm="ralph-context"'
                await answer(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded
