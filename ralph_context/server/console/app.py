"""The memory console: pages and forms at ``/console``, on the HTTP server's port.

Who may look: the HTTP API's own bearer tokens, the store's owner token among them. A
browser logs in once, with a token or a one-time link (``login``), and gets a session
cookie (``sessions``); a script may send the token as ``Authorization: Bearer`` instead. A
token scoped to some namespaces shows only those. With no token at all
(``server.owner_token`` off and none configured: loopback only), the console opens at once.

Every request first passes ``guard`` (its Host, and a POST's Origin, name this server).
A form's body is read only after its sender's session or token was checked, and only up to
``guard.MAX_FORM_BYTES``. Every state-changing form carries the session's CSRF token; a
read-only server
(``serve --read-only``) shows no write button and refuses every write with 403.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ralph_context import namespaces
from ralph_context._logging import get_logger
from ralph_context.engine import Engine
from ralph_context.errors import RalphContextError
from ralph_context.server.console.guard import (
    PREFIX,
    Refusal,
    foreign,
    local,
    read_form,
    set_cookie,
)
from ralph_context.server.console.login import Login
from ralph_context.server.console.render import HERE, Renderer
from ralph_context.server.console.sessions import COOKIE, EVERY, Session, Sessions
from ralph_context.server.tokens import TokenBook

__all__ = ["PREFIX", "Console", "EngineSource", "Visit"]

log = get_logger("ralph_context.console")


class EngineSource(Protocol):
    """What the console needs of the server (``server.http.Spaces`` is one)."""

    read_only: bool
    security: TransportSecuritySettings

    async def engine(self, name: str) -> Engine: ...

    def names(self) -> list[str]: ...


@dataclass
class Visit:
    """One request's view of the console: who, which namespace, what they may do."""

    request: Request
    started: float
    session: Session | None
    grant: frozenset[str]
    namespace: str
    names: list[str]
    engine: Engine
    writable: bool
    # An error page for this request: ``fail(status, text)``.
    fail: Callable[[int, str], Response]
    new_session: bool = False

    def link(self, path: str, **params: Any) -> str:
        """A console URL in this visit's namespace; ``None`` and empty values are left out."""
        query = {k: v for k, v in params.items() if v not in (None, "", [], ())}
        if self.namespace != namespaces.DEFAULT:
            query["ns"] = self.namespace
        text = urlencode(query, doseq=True)
        return f"{PREFIX}{path}" + (f"?{text}" if text else "")

    @property
    def here(self) -> str:
        url = self.request.url
        return url.path + (f"?{url.query}" if url.query else "")


Page = Callable[[Visit], Awaitable[Response | tuple[str, dict[str, Any]]]]
Action = Callable[[Visit, dict[str, str]], Awaitable[str]]


class Console:
    """The console's routes over the server's namespaces.

    Args:
        source: The namespaces and their engines.
        tokens: The server's tokens (none: no login, loopback only).
        sessions: Where browser sessions live (a fresh set by default).
    """

    def __init__(
        self, source: EngineSource, tokens: TokenBook, sessions: Sessions | None = None
    ) -> None:
        self.source = source
        self.tokens = tokens
        self.sessions = sessions or Sessions()
        self.renderer = Renderer()
        self.login = Login(tokens, self.sessions, self.renderer, source.security, self.error)

    def routes(self, pages: dict[str, Page], actions: dict[str, Action]) -> list[BaseRoute]:
        """``/console`` and everything under it: ``pages`` (GET) and ``actions`` (POST) by
        path, the login, the logout and the static files."""
        inner: list[BaseRoute] = [
            Route("/", self._index),
            Route("/login", self.login.login, methods=["GET", "POST"]),
            Route("/logout", self.login.logout, methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
        inner += [Route(path, self._page(view)) for path, view in pages.items()]
        inner += [Route(path, self._action(act), methods=["POST"]) for path, act in actions.items()]
        return [Route(PREFIX, self._index), Mount(PREFIX, routes=inner)]

    # -- who is asking -----------------------------------------------------------------

    async def _visit(self, request: Request, started: float) -> Visit | Response:
        """Who is asking and for which namespace, or the response that turns them away."""
        session = self.sessions.get(request.cookies.get(COOKIE))
        new_session = False
        user = request.scope.get("user")
        if isinstance(user, AuthenticatedUser):  # a script with the bearer header
            grant = frozenset(user.scopes)
        elif not self.tokens.enabled:
            if session is None or session.grant is None:
                session, new_session = self.sessions.new(frozenset({EVERY})), True
            grant = session.grant or frozenset({EVERY})
        elif session is not None and session.grant is not None:
            grant = session.grant
        else:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(
                f"{PREFIX}/login?{urlencode({'next': target})}", status_code=303
            )
        names = self._names(grant)
        asked = request.query_params.get("ns")
        if asked is None:
            chosen = namespaces.DEFAULT if namespaces.DEFAULT in names else None
            chosen = chosen or (names[0] if names else None)
        else:
            chosen = asked if asked in names else None
        if chosen is None:
            text = "this token grants no namespace here" if asked is None else "no such namespace"
            return self.error(request, started, 404, f"{text}: {asked or ''}"[:120])
        try:
            engine = await self.source.engine(chosen)
        except RuntimeError as exc:
            return self.error(request, started, 503, str(exc))
        return Visit(
            request,
            started,
            session,
            grant,
            chosen,
            names,
            engine,
            writable=not self.source.read_only,
            fail=lambda status, text: self.error(request, started, status, text),
            new_session=new_session,
        )

    def _names(self, grant: frozenset[str]) -> list[str]:
        """Namespaces this grant may switch to: those on disk or open, and those it names."""
        known = set(self.source.names())
        if EVERY not in grant:
            known = (known | grant) & grant
        return sorted(known, key=lambda name: (name != namespaces.DEFAULT, name))

    # -- pages and actions --------------------------------------------------------------

    def _page(self, view: Page) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            refused = foreign(request, self.source.security, posting=False)
            if refused is not None:
                return refused
            visit = await self._visit(request, started)
            if isinstance(visit, Response):
                return visit
            try:
                shown = await view(visit)
            except RalphContextError as exc:  # the store is down or read-only: say so
                return self._keep(visit, visit.fail(503, str(exc)))
            if isinstance(shown, Response):
                return self._keep(visit, shown)
            template, context = shown
            response = self.renderer.page(template, self._common(visit) | context, started=started)
            return self._keep(visit, response)

        return endpoint

    def _action(self, act: Action) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            refused = foreign(request, self.source.security, posting=True)
            if refused is not None:
                return refused
            visit = await self._visit(request, started)
            if isinstance(visit, Response):
                return visit
            bearer = isinstance(request.scope.get("user"), AuthenticatedUser)
            if not bearer and (visit.session is None or visit.new_session):
                return self.error(request, started, 403, "no session: reload the page")
            form = await read_form(request)  # only now: the sender may post here
            if isinstance(form, Refusal):
                return self.error(request, started, form.status, form.text)
            if not bearer and not (visit.session and visit.session.csrf_matches(form.get("csrf"))):
                return self.error(request, started, 403, "the form's CSRF token is wrong")
            if not visit.writable:
                return self.error(request, started, 403, "this server is read-only")
            try:
                message = await act(visit, form)
            except RalphContextError as exc:
                return visit.fail(503, str(exc))
            if visit.session is not None:
                visit.session.flash = message
            return RedirectResponse(local(form.get("back")), status_code=303)

        return endpoint

    def _common(self, visit: Visit) -> dict[str, Any]:
        session = visit.session
        return {
            "visit": visit,
            "link": visit.link,
            "ns": visit.namespace,
            "namespaces": visit.names,
            "writable": visit.writable,
            "csrf": session.csrf if session else "",
            "flash": session.take_flash() if session else None,
            "logged_in": self.tokens.enabled and session is not None,
            "here": visit.here,
        }

    def _keep(self, visit: Visit, response: Response) -> Response:
        if visit.new_session and visit.session is not None:
            set_cookie(visit.request, response, visit.session)
        return response

    def error(self, request: Request, started: float, status: int, text: str) -> Response:
        """A page saying what went wrong, in plain words."""
        context = {"status": status, "message": text, "path": request.url.path}
        return self.renderer.page("error.html", context, started=started, status=status)

    async def _index(self, request: Request) -> Response:
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(f"{PREFIX}/search{query}", status_code=303)
