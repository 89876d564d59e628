"""Logging in to the console with a token, and out.

The form takes the same tokens as the HTTP API (``server.tokens``), compared in constant
time. The form itself carries a CSRF token of a session made before login (so another
site cannot log a browser in to its own token); a login that succeeds drops that session
and opens a new one, so an id seen before logging in is never the one trusted after.
Failed logins are limited per client address (a burst of 10, then one every two seconds).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ralph_context._logging import get_logger
from ralph_context.server.console.guard import (
    PREFIX,
    Refusal,
    foreign,
    local,
    read_form,
    set_cookie,
)
from ralph_context.server.console.render import Renderer
from ralph_context.server.console.sessions import COOKIE, Session, Sessions
from ralph_context.server.limits import RateLimiter, retry_after
from ralph_context.server.tokens import TokenBook

__all__ = ["Login"]

log = get_logger("ralph_context.console")

_LOGIN_RATE, _LOGIN_BURST = 0.5, 10
ErrorPage = Callable[[Request, float, int, str], Response]


class Login:
    """``/console/login`` (GET: the form; POST: check the token) and ``/console/logout``.

    Args:
        tokens: The server's tokens.
        sessions: The console's sessions.
        renderer: Renders the form.
        security: The server's Host/Origin lists.
        error: Renders an error page.
    """

    def __init__(
        self,
        tokens: TokenBook,
        sessions: Sessions,
        renderer: Renderer,
        security: TransportSecuritySettings,
        error: ErrorPage,
    ) -> None:
        self.tokens = tokens
        self.sessions = sessions
        self.renderer = renderer
        self.security = security
        self.error = error
        self._failures = RateLimiter(_LOGIN_RATE, _LOGIN_BURST)

    async def login(self, request: Request) -> Response:
        started = time.perf_counter()
        refused = foreign(request, self.security, posting=request.method == "POST")
        if refused is not None:
            return refused
        target = local(request.query_params.get("next"))
        if not self.tokens.enabled:
            return RedirectResponse(target, status_code=303)
        session = self.sessions.get(request.cookies.get(COOKIE))
        if request.method == "GET":
            if session is not None and session.grant is not None:
                return RedirectResponse(target, status_code=303)
            fresh = session is None
            session = session or self.sessions.new(None)
            response = self._form(started, session, target, None, 200)
            if fresh:
                set_cookie(request, response, session)
            return response
        if session is None:  # no form of ours was loaded: refused before the body is read
            return self.error(request, started, 403, "the login form expired: reload it")
        form = await read_form(request)
        if isinstance(form, Refusal):
            return self.error(request, started, form.status, form.text)
        target = local(form.get("next", ""))
        if not session.csrf_matches(form.get("csrf", "")):
            return self.error(request, started, 403, "the login form expired: reload it")
        client = request.client.host if request.client else "unknown"
        wait = self._failures.wait_for(client)
        if wait > 0:
            response = self._form(started, session, target, "Too many tries: wait.", 429)
            response.headers["Retry-After"] = retry_after(wait)
            return response
        grant = self.tokens.verify(form.get("token", "").strip())
        if grant is None:
            log.warning("console_login_refused", client=client)
            return self._form(started, session, target, "That token is not accepted.", 401)
        self.sessions.drop(session.id)
        trusted = self.sessions.new(grant.namespaces)
        log.info("console_login", client=client, token=grant.label)
        response = RedirectResponse(target, status_code=303)
        set_cookie(request, response, trusted)
        return response

    def _form(
        self, started: float, session: Session, target: str, problem: str | None, status: int
    ) -> Response:
        context = {"csrf": session.csrf, "next": target, "problem": problem}
        return self.renderer.page("login.html", context, started=started, status=status)

    async def logout(self, request: Request) -> Response:
        started = time.perf_counter()
        refused = foreign(request, self.security, posting=True)
        if refused is not None:
            return refused
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is None:
            return self.error(request, started, 403, "no session to log out of")
        form = await read_form(request)
        if isinstance(form, Refusal):
            return self.error(request, started, form.status, form.text)
        if not session.csrf_matches(form.get("csrf", "")):
            return self.error(request, started, 403, "the form's CSRF token is wrong")
        self.sessions.drop(session.id)
        response = RedirectResponse(f"{PREFIX}/login", status_code=303)
        response.delete_cookie(COOKIE, path=PREFIX)
        return response
