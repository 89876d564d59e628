"""The console's sessions: who a browser is, what it may see, and its CSRF token.

A browser holds only a random session id, in an HttpOnly, SameSite=Strict cookie scoped to
``/console``: script cannot read it, and no other site's page can make the browser send it
(so a form on another site cannot act here even before the CSRF check). The session itself
stays in this process: the namespaces its token grants and a per-session CSRF token every
state-changing form carries in a hidden field. A restart forgets every session, which
costs a login, never a leak.

Sessions are bounded in number and in idle time: past the bound the oldest is evicted, and
an idle session expires. Only a login makes one (``login``: the login form needs none), so
a flood of anonymous requests cannot evict a logged-in browser; only a flood of logins,
which takes a token. (A server with no token at all, ``server.owner_token`` off, gives
every browser a session at its first page: there every visitor is trusted alike.)
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["COOKIE", "EVERY", "Session", "Sessions"]

COOKIE = "ralph_console"
EVERY = "*"
# 32 random bytes, URL-safe.
_ID_BYTES = 32


@dataclass
class Session:
    """One browser's session.

    Attributes:
        id: The cookie's value.
        csrf: The token every state-changing form of this session carries.
        grant: The namespaces it may see (``*``: every one), ``None`` until logged in.
        flash: A one-shot message for the next page (what the last action did).
    """

    id: str
    csrf: str
    grant: frozenset[str] | None
    seen: float
    flash: str | None = field(default=None)

    def allows(self, namespace: str) -> bool:
        return self.grant is not None and (EVERY in self.grant or namespace in self.grant)

    def csrf_matches(self, given: str | None) -> bool:
        """Constant-time comparison of a form's token with this session's."""
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())

    def take_flash(self) -> str | None:
        message, self.flash = self.flash, None
        return message


class Sessions:
    """The open sessions, oldest first.

    Args:
        limit: Sessions kept at most (the oldest is evicted for a new one).
        idle_seconds: A session not used for this long expires.
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        *,
        limit: int = 1_000,
        idle_seconds: float = 12 * 3600,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._open: OrderedDict[str, Session] = OrderedDict()

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id (its idle clock restarts), or ``None``."""
        if not session_id:
            return None
        session = self._open.get(session_id)
        if session is None:
            return None
        now = self._clock()
        if now - session.seen > self.idle_seconds:
            del self._open[session_id]
            return None
        session.seen = now
        self._open.move_to_end(session_id)
        return session

    def new(self, grant: frozenset[str] | None) -> Session:
        """A fresh session (a login always gets a new id: an id seen before logging in is
        never the one that is trusted after)."""
        while len(self._open) >= self.limit:
            self._open.popitem(last=False)
        session = Session(
            id=secrets.token_urlsafe(_ID_BYTES),
            csrf=secrets.token_urlsafe(_ID_BYTES),
            grant=grant,
            seen=self._clock(),
        )
        self._open[session.id] = session
        return session

    def drop(self, session_id: str) -> None:
        self._open.pop(session_id, None)
