"""The checks every console request passes before any page or form: that it names this
server (Host, and a POST's Origin), that a redirect stays in the console, the session
cookie's attributes, and a form's size.

A page on another site that resolves its own name to 127.0.0.1 (DNS rebinding) sends its
own name as Host: 421, as ``/mcp`` answers. A form posted from another origin: 403. A
``next`` or ``back`` field naming another site is replaced by the console's start, so a
link cannot use the console as an open redirect.

A form is read only once the session (or bearer token) was checked, and only up to
:data:`MAX_FORM_BYTES`: a 900 MB form posted without credentials was once parsed whole
(the server grew by 820 MB) and only then sent to the login.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import parse_qsl

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response

from ralph_context.server.console.sessions import COOKIE, Session

__all__ = ["MAX_FORM_BYTES", "PREFIX", "Refusal", "foreign", "local", "read_form", "set_cookie"]

PREFIX = "/console"
# A console form holds an item id, a CSRF token, a login token, a path: a few hundred bytes.
MAX_FORM_BYTES = 64 * 1024
_FORM = "application/x-www-form-urlencoded"


class Refusal(NamedTuple):
    """Why a form was not read: the status and the sentence the error page shows."""

    status: int
    text: str


async def read_form(request: Request) -> dict[str, str] | Refusal:
    """The fields of ``request``'s URL-encoded form (the last of a repeated name), or why it
    was refused: 413 past :data:`MAX_FORM_BYTES` (by its Content-Length before a byte is
    read, else as soon as the bytes read pass it), 415 for another encoding (the console's
    forms send none other)."""
    too_large = Refusal(413, f"the form is larger than {MAX_FORM_BYTES // 1024} KiB")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        return too_large
    kind = request.headers.get("content-type", _FORM).split(";")[0].strip().lower()
    if kind != _FORM:
        return Refusal(415, f"the console's forms are {_FORM}, not {kind!r:.60}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return too_large
    return dict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))


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
