"""Logging in to the console, and out.

Two ways in. The form takes the same tokens as the HTTP API (``server.tokens``), the
store's owner token among them, compared in constant time. A one-time link
(``/console/login?code=...``, ``config.console_link``) logs the owner's browser in without
a token typed: ``ralph-context console`` opens one.

No session exists before a login succeeds: the sessions are the logged-in browsers, and
anonymous visitors cannot push them out of their bounded table (1,001 anonymous GETs of
this form once evicted a logged-in session). The form's CSRF token is stateless instead: a
random pre-login cookie (HttpOnly, SameSite=Strict) and, in the form, its HMAC under a
secret of this process; a POST must bring both (so another site cannot log a browser in
to its own token). A login opens a new session, so an id seen before logging in is never
the one trusted after. Failed logins are limited per client address (a burst of 10, then
one every two seconds).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ralph_context._logging import get_logger
from ralph_context.config.console_link import Codes
from ralph_context.server.console.guard import (
    PREFIX,
    Refusal,
    foreign,
    local,
    read_form,
    set_cookie,
)
from ralph_context.server.console.render import Renderer
from ralph_context.server.console.sessions import COOKIE, EVERY, Sessions
from ralph_context.server.limits import RateLimiter, retry_after
from ralph_context.server.tokens import TokenBook

__all__ = ["PRE_LOGIN_COOKIE", "Login"]

log = get_logger("ralph_context.console")

PRE_LOGIN_COOKIE = "ralph_console_login"
_LOGIN_RATE, _LOGIN_BURST = 0.5, 10
_PRE_LOGIN_BYTES = 32
ErrorPage = Callable[[Request, float, int, str], Response]


class Login:
    """``/console/login`` (GET: the form, or a one-time link; POST: check the token) and
    ``/console/logout``.

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
        self._secret = secrets.token_bytes(32)
        key = tokens.owner_digest
        self.codes = None if key is None else Codes(key)

    async def login(self, request: Request) -> Response:
        started = time.perf_counter()
        refused = foreign(request, self.security, posting=request.method == "POST")
        if refused is not None:
            return refused
        target = local(request.query_params.get("next"))
        if not self.tokens.enabled:
            return RedirectResponse(target, status_code=303)
        if request.method == "GET":
            code = request.query_params.get("code")
            if code is not None:
                return self._by_link(request, started, code, target)
            session = self.sessions.get(request.cookies.get(COOKIE))
            if session is not None and session.grant is not None:
                return RedirectResponse(target, status_code=303)
            return self._form(request, started, target, None, 200)
        pre_login = request.cookies.get(PRE_LOGIN_COOKIE, "")
        if not pre_login:  # no form of ours was loaded: refused before the body is read
            return self.error(request, started, 403, "the login form expired: reload it")
        form = await read_form(request)
        if isinstance(form, Refusal):
            return self.error(request, started, form.status, form.text)
        target = local(form.get("next", ""))
        if not hmac.compare_digest(form.get("csrf", ""), self._csrf(pre_login)):
            return self.error(request, started, 403, "the login form expired: reload it")
        client = request.client.host if request.client else "unknown"
        wait = self._failures.wait_for(client)
        if wait > 0:
            response = self._form(request, started, target, "Too many tries: wait.", 429)
            response.headers["Retry-After"] = retry_after(wait)
            return response
        grant = self.tokens.verify(form.get("token", "").strip())
        if grant is None:
            log.warning("console_login_refused", client=client)
            return self._form(request, started, target, "That token is not accepted.", 401)
        log.info("console_login", client=client, token=grant.label)
        return self._logged_in(request, target, grant.namespaces)

    def _by_link(self, request: Request, started: float, code: str, target: str) -> Response:
        """A one-time link's GET: logged in (every namespace: only the owner can make one),
        or the form saying why not."""
        client = request.client.host if request.client else "unknown"
        if self.codes is None or not self.codes.take(code):
            log.warning("console_link_refused", client=client)
            problem = "That login link has expired or was used: run `ralph-context console` again."
            return self._form(request, started, target, problem, 401)
        log.info("console_login", client=client, token="one-time link")
        return self._logged_in(request, target, frozenset({EVERY}))

    def _logged_in(self, request: Request, target: str, grant: frozenset[str]) -> Response:
        """A new session for ``grant`` (any session the browser had is dropped)."""
        old = request.cookies.get(COOKIE)
        if old:
            self.sessions.drop(old)
        trusted = self.sessions.new(grant)
        response = RedirectResponse(target, status_code=303)
        set_cookie(request, response, trusted)
        response.delete_cookie(PRE_LOGIN_COOKIE, path=PREFIX, httponly=True, samesite="strict")
        return response

    def _csrf(self, pre_login: str) -> str:
        return hmac.new(self._secret, pre_login.encode(), hashlib.sha256).hexdigest()

    def _form(
        self, request: Request, started: float, target: str, problem: str | None, status: int
    ) -> Response:
        """The form, its CSRF token bound to the browser's pre-login cookie (a new one when
        it has none): nothing is kept here for it."""
        pre_login = request.cookies.get(PRE_LOGIN_COOKIE, "")
        fresh = len(pre_login) < 40
        if fresh:
            pre_login = secrets.token_urlsafe(_PRE_LOGIN_BYTES)
        context = {"csrf": self._csrf(pre_login), "next": target, "problem": problem}
        response = self.renderer.page("login.html", context, started=started, status=status)
        if fresh:
            response.set_cookie(
                PRE_LOGIN_COOKIE,
                pre_login,
                httponly=True,
                samesite="strict",
                path=PREFIX,
                secure=request.url.scheme == "https",
            )
        return response

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
