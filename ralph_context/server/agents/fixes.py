"""Failures and their fixes, for the agents' hooks (``events``): how a failure was fixed
before, and a fix stored when a command that failed succeeds.

A failure is stored behind its hook's answer, so a fix arriving a moment later (another
session's command, or a failure taken from the spool as the server started) may find it
not stored yet: the fix waits for the failures answered before it (numbered, any session;
at most :data:`FAILURES_WAIT`), else it went unlinked (seen on CI).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio

from ralph_context.engine import Engine
from ralph_context.models import ContextItem, JsonValue
from ralph_context.server.agents.capture import Failure, provenance, trim

__all__ = ["ERROR_TAG", "FAILURES_WAIT", "FIX_TAG", "Fixes", "Store"]

FIX_TAG = "fix"
ERROR_TAG = "agent-error"
# The longest a fix waits for failures still being stored (seconds).
FAILURES_WAIT = 10.0
_FIXES_SHOWN = 2

# How a capture is stored: (client, payload, content, kind, metadata, tags).
Store = Callable[
    [str, dict[str, Any], str, str, dict[str, JsonValue], tuple[str, ...]],
    Coroutine[Any, Any, ContextItem],
]


class Fixes:
    """One namespace's failures and fixes.

    Args:
        engine: The namespace's engine.
        store: How a capture is stored (with its client's tags and source).
    """

    def __init__(self, engine: Engine, store: Store) -> None:
        self.engine = engine
        self._store = store
        # Failures answered so far (numbered), those still being stored behind their
        # answers (any session), and an event set as each is.
        self.answered = 0
        self._unstored: set[int] = set()
        self._stored_one = anyio.Event()

    # -- reading ------------------------------------------------------------------------

    async def fixes_for(self, command: str, error: str) -> list[ContextItem]:
        """Fixes of this command's earlier failures, then of failures like this one."""
        same = await self.engine.search(
            error or command,
            context_types=["skill"],
            tags=[FIX_TAG],
            metadata=[{"key": "command", "op": "==", "value": self.as_stored(command)}],
            min_score=0.0,
            max_items=1,
        )
        like = await self.engine.search(
            f"{command}\n{error}", context_types=["skill"], tags=[FIX_TAG], max_items=2
        )
        found: dict[str, ContextItem] = {}
        for hit in (*same.items, *like.items):
            found.setdefault(hit.item.id, hit.item)
        return list(found.values())[:_FIXES_SHOWN]

    async def with_fixes(self, items: list[ContextItem]) -> list[ContextItem]:
        """``items`` with each failure that was fixed replaced by its fix (which quotes
        the failure): the agent asking about an error wants how it was resolved, and the
        two texts together would be near-duplicates."""
        shown: dict[str, ContextItem] = {}
        for item in items:
            fix = await self.fix_of(item) if ERROR_TAG in item.tags else None
            chosen = fix or item
            shown.setdefault(chosen.id, chosen)
        return list(shown.values())

    async def fix_of(self, error: ContextItem) -> ContextItem | None:
        found = await self.engine.search(
            error.content[:500],
            context_types=["skill"],
            tags=[FIX_TAG],
            metadata=[{"key": "resolves", "op": "==", "value": error.id}],
            min_score=0.0,
            max_items=1,
        )
        return found.items[0].item if found.items else None

    def as_stored(self, command: str) -> str:
        """``command`` as the store keeps it: with its secrets redacted (a command that
        carries a token is stored without it, and must still be found as itself)."""
        return self.engine.redactor.clean(command)

    async def open_error(self, command: str) -> ContextItem | None:
        """The newest stored failure of ``command``, unless a fix resolves it already.
        Read newest first (not ranked: a search would drop all but one of the identical
        failures of a command, and not necessarily keep the newest)."""
        page = await self.engine.browse(context_types=["error"], tags=[ERROR_TAG], limit=200)
        stored = self.as_stored(command)
        for item in page.items:
            if item.metadata.get("command") == stored:
                return None if await self.fix_of(item) is not None else item
        return None

    # -- writing (behind the answer) ----------------------------------------------------

    def answer_failure(self) -> int:
        """Number a failure being answered now (its store follows the answer)."""
        self.answered += 1
        return self.answered

    def unstored(self, number: int) -> None:
        """Failure ``number``'s store was queued (not dropped): fixes wait for it."""
        self._unstored.add(number)

    async def store_failure(
        self, client: str, payload: dict[str, Any], failure: Failure, error: str, number: int
    ) -> None:
        code = "" if failure.exit_code is None else f" (exit {failure.exit_code})"
        content = f"`{failure.command}` failed{code}:\n{error or '(no output)'}"
        metadata = {**provenance(client, payload), "command": failure.command}
        if failure.exit_code is not None:
            metadata["exit_code"] = failure.exit_code
        try:
            await self._store(client, payload, content, "error", metadata, (ERROR_TAG,))
        finally:
            self._unstored.discard(number)
            self._stored_one.set()
            self._stored_one = anyio.Event()

    async def link(
        self,
        client: str,
        payload: dict[str, Any],
        command: str,
        steps: list[str],
        failed_here: bool,
        failures_before: int,
    ) -> None:
        """When ``command`` failed before and succeeds now: the steps between are its fix.
        Failures answered before ``failures_before`` was counted, and still being stored,
        are waited for (at most :data:`FAILURES_WAIT`)."""
        with anyio.move_on_after(FAILURES_WAIT):
            while any(number <= failures_before for number in self._unstored):
                await self._stored_one.wait()
        error = await self.open_error(command)
        if error is None:
            return
        how = "; ".join(steps) if steps else "nothing else: it succeeded when run again"
        where = "in this session" if failed_here else "in a later session"
        cause = trim(error.content, 600)
        content = (
            f"Fix for a failure of `{command}`. It failed with: {cause}\n"
            f"How it was fixed ({where}): {how}; then `{command}` succeeded."
        )
        metadata = {**provenance(client, payload), "command": command, "resolves": error.id}
        await self._store(client, payload, content, "skill", metadata, (FIX_TAG,))
