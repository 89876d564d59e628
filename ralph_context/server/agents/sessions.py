"""What the project's server remembers about each agent session while it runs.

- What it injected (item id -> a digest of the content): an item goes into a session's
  context once unless it changed since; after a compaction (``PreCompact``) the model has
  lost what it was told, so the record is cleared.
- The steps that succeeded (commands and edits, the latest :data:`MAX_STEPS`): when a
  command that failed before succeeds, the steps since the failure (or this session's,
  when it failed in an earlier one) are how it was fixed.
- Captures still being stored, so ``SessionEnd`` can wait for them.

Held in memory, bounded (the least recently seen sessions are dropped past
:data:`MAX_SESSIONS`). A server that restarts mid-session forgets this: at worst an item
is injected a second time.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field

import anyio

__all__ = ["MAX_SESSIONS", "MAX_STEPS", "Session", "SessionBook", "digest"]

MAX_SESSIONS = 256
MAX_STEPS = 20
MAX_FIX_STEPS = 6


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


@dataclass
class Session:
    """One agent session's state on the server."""

    injected: dict[str, str] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    # Normalised command -> how many steps had been taken when it last failed.
    failed_at: dict[str, int] = field(default_factory=dict)
    taken: int = 0
    pending: int = 0
    settled: anyio.Event = field(default_factory=anyio.Event)
    # Captures are stored in the order they happened (a fix after its error).
    order: anyio.Lock = field(default_factory=anyio.Lock)

    def fresh(self, item_id: str, content: str) -> bool:
        """Whether the item is new to this session (or changed since it was injected)."""
        return self.injected.get(item_id) != digest(content)

    def mark(self, item_id: str, content: str) -> None:
        self.injected[item_id] = digest(content)

    def step(self, text: str) -> None:
        self.steps.append(text)
        self.taken += 1
        del self.steps[:-MAX_STEPS]

    def steps_since(self, command: str) -> list[str]:
        """The steps after ``command`` last failed here (the latest few, if it failed in
        an earlier session)."""
        start = self.failed_at.get(command)
        if start is None:  # the latest few: what led up to the success
            return list(self.steps[-MAX_FIX_STEPS:])
        count = self.taken - start
        return list(self.steps[-count:]) if count > 0 else []


class SessionBook:
    """Sessions by id, least recently seen dropped first."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self._limit = limit
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = Session()
            while len(self._sessions) > self._limit:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session_id)
        return session

    def drop(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
