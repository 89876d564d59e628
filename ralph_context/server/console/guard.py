"""The checks every console request passes before any page or form: that it names this
server (Host, and a POST's Origin), that a redirect stays in the console, and the session
cookie's attributes.

A page on another site that resolves its own name to 127.0.0.1 (DNS rebinding) sends its
own name as Host: 421, as ``/mcp`` answers. A form posted from another origin: 403. A
``next`` or ``back`` field naming another site is replaced by the console's start, so a
link cannot use the console as an open redirect.
"""

from __future__ import annotations

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response

from ralph_context.server.console.sessions import COOKIE, Session

__all__ = ["PREFIX", "foreign", "local", "set_cookie"]

PREFIX = "/console"


def _listed(value: str | None, allowed: list[str]) -> bool:
    """``value`` is one of ``allowed``, where ``name:*`` admits any port (as for ``/mcp``)."""
    if not value:
        return False
    return any(
        value == entry or (entry.endswith(":*") and value.startswith(entry[:-1]))
        for entry in allowed
    )


def foreign(
    request: Request, security: TransportSecuritySettings, *, posting: bool
) -> Response | None:
    """421 for a Host that is not this server, 403 for a POST from another origin; ``None``
    when the request may go on."""
    if not _listed(request.headers.get("host"), security.allowed_hosts):
        return Response("Invalid Host header", status_code=421)
    origin = request.headers.get("origin")
    if posting and origin is not None and not _listed(origin, security.allowed_origins):
        return Response("Invalid Origin header", status_code=403)
    return None


def local(target: str | None) -> str:
    """``target`` if it is a path of this console, else the console's start."""
    if (
        target
        and target.startswith(PREFIX)
        and not target.startswith("//")
        and "\\" not in target
        and all(ord(c) > 31 for c in target)
    ):
        return target
    return f"{PREFIX}/"


def set_cookie(request: Request, response: Response, session: Session) -> None:
    """The session's cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's
    page makes the browser send it), only under ``/console``, Secure behind HTTPS."""
    response.set_cookie(
        COOKIE,
        session.id,
        httponly=True,
        samesite="strict",
        path=PREFIX,
        secure=request.url.scheme == "https",
    )
