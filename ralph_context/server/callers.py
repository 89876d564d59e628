"""Who asks: a local client (stdio, or a test's direct call) or a remote one over HTTP,
and which namespaces its token grants. What the answers about the store may show
depends on it.

- A token scoped to some namespaces sees those namespaces only, in ``get_context_stats``
  and ``context://stats``: the names and sizes of the others are other projects' facts.
- A remote client never sees a path of the server's file system (the store's folder in
  ``health_check``, or inside an actor's last error): it says where the server's owner
  keeps things and, beside a leaked token, where to look. A local client (stdio: the
  process that started the server, on the same machine) keeps the path, which tells a
  person which store answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.mcpserver import Context

from ralph_context.config import Settings
from ralph_context.config.token_file import EVERY

__all__ = [
    "LOCAL",
    "Caller",
    "caller_of",
    "client_name",
    "current",
    "hide_paths",
    "request_of",
    "serving",
]


@dataclass(frozen=True)
class Caller:
    """The client of one request."""

    remote: bool
    # The namespaces its token grants (``None``: every one, or no tokens in use).
    namespaces: frozenset[str] | None = None

    def sees(self, namespace: str) -> bool:
        """Whether facts about ``namespace`` may be shown to this client."""
        return self.namespaces is None or namespace in self.namespaces


LOCAL = Caller(remote=False)


def request_of(context: Context[Any, Any] | None) -> Any | None:
    """The HTTP request ``context`` belongs to; ``None`` over stdio or outside a request
    (a test's direct call)."""
    if context is None:
        return None
    try:
        return context.request_context.request
    except (LookupError, ValueError):  # no request in flight
        return None


def client_name(context: Context[Any, Any] | None) -> str | None:
    """The name the client gave in its ``clientInfo`` (the handshake's, or the request's
    own on the stateless protocol), if any."""
    if context is None:
        return None
    try:
        params = context.session.client_params
    except (LookupError, ValueError, AttributeError):  # outside a request
        return None
    name = getattr(getattr(params, "client_info", None), "name", None)
    return name if isinstance(name, str) else None


def caller_of(context: Context[Any, Any] | None) -> Caller:
    """The client of the request ``context`` belongs to: remote when it came over HTTP
    (the request is there), with its token's namespaces when tokens are in use."""
    request = request_of(context)
    if request is None:
        return LOCAL
    user = getattr(request, "scope", {}).get("user")
    if isinstance(user, AuthenticatedUser) and EVERY not in user.scopes:
        return Caller(remote=True, namespaces=frozenset(user.scopes))
    return Caller(remote=True)


# Set by the server around each tool call and resource read (``app.ContextServer``): a
# static resource's function cannot take the request's context, so it asks here.
_CALLER: ContextVar[Caller] = ContextVar("ralph_context_caller", default=LOCAL)


@contextmanager
def serving(context: Context[Any, Any] | None) -> Iterator[Caller]:
    """Within the block, :func:`current` is the client of ``context``'s request."""
    caller = caller_of(context)
    token = _CALLER.set(caller)
    try:
        yield caller
    finally:
        _CALLER.reset(token)


def current() -> Caller:
    """The client of the request being answered (``LOCAL`` outside of one)."""
    return _CALLER.get()


def hide_paths(text: str | None, settings: Settings) -> str | None:
    """``text`` (an error) with the store's and the model's folders replaced by
    ``<store>`` and ``<model>``, for a remote reader."""
    if text is None:
        return None
    places = {
        str(settings.store_root()): "<store>",
        str(settings.embeddings.resolved_model_path()): "<model>",
    }
    for place in sorted(places, key=len, reverse=True):
        text = text.replace(place, places[place])
    return text
