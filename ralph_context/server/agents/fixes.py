"""Failures and their fixes, for the agents' hooks (``events``): how a failure was fixed
before, and a fix stored when a command that failed succeeds.

A failure is stored behind its hook's answer, so a fix arriving a moment later (another
session's command, or a failure taken from the spool as the server started) may find it
not stored yet: the fix waits for the failures answered before it (numbered, any session;
at most :data:`FAILURES_WAIT`), else it went unlinked (seen on CI).

A failure fixed once and seen again was fixed again, differently: the first fix did not
hold. Each failure carries its key (:func:`failure_key`: the command's last lines of
output, numbers aside) and its fix the key of the failure it resolved; a fix given (beside
a failure, in a prompt's answer) is replaced by the newest fix of the same command and key
the hooks recorded (:meth:`Fixes.newest`). Only the hooks' own fixes replace one: a note
an MCP client stored cannot push the real fix out.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import anyio

from ralph_context.engine import Engine
from ralph_context.models import ContextItem, JsonValue
from ralph_context.server.agents.capture import Failure, provenance, trim
from ralph_context.server.agents.evidence import own_record

__all__ = [
    "ERROR_TAG",
    "FAILURES_WAIT",
    "FIX_TAG",
    "Fixes",
    "Store",
    "failure_key",
    "without_superseded",
]

FIX_TAG = "fix"
ERROR_TAG = "agent-error"
# The longest a fix waits for failures still being stored (seconds).
FAILURES_WAIT = 10.0
_FIXES_SHOWN = 2
# The newest fixes read to find which replace the ones given.
_NEWEST_READ = 100
# What makes two failures of a command the same: the last lines it printed (the cause),
# with what changes from run to run (times, counts, line numbers, addresses) aside.
_KEY_LINES = 3
_VARYING = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{7,}\b|\d+")

# How a capture is stored: (client, payload, content, kind, metadata, tags).
Store = Callable[
    [str, dict[str, Any], str, str, dict[str, JsonValue], tuple[str, ...]],
    Coroutine[Any, Any, ContextItem],
]


def failure_key(error: str) -> str:
    """The key of a failure whose output was ``error``: equal for two runs that failed the
    same way."""
    lines = [line.strip() for line in error.splitlines() if line.strip()][-_KEY_LINES:]
    text = _VARYING.sub("#", "\n".join(lines))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def _key(fix: ContextItem) -> tuple[str, str] | None:
    command, failure = fix.metadata.get("command"), fix.metadata.get("failure")
    return (command, failure) if isinstance(command, str) and isinstance(failure, str) else None


def _latest(newest_first: Sequence[ContextItem]) -> dict[tuple[str, str], ContextItem]:
    """The newest fix the hooks recorded of each failure, among fixes read newest first."""
    latest: dict[tuple[str, str], ContextItem] = {}
    for item in newest_first:
        key = _key(item)
        if key is not None and own_record(item):
            latest.setdefault(key, item)
    return latest


def without_superseded(newest_first: Sequence[ContextItem]) -> list[ContextItem]:
    """Fixes read newest first, without those a newer fix of the same failure replaces."""
    latest = _latest(newest_first)
    kept = []
    for fix in newest_first:
        key = _key(fix)
        if key is None or latest.get(key, fix) is fix:
            kept.append(fix)
    return kept


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
        found = [hit.item for hit in (*same.items, *like.items)]
        now = (self.as_stored(command), failure_key(self.as_stored(error)))
        return (await self.newest(found, now))[:_FIXES_SHOWN]

    async def newest(
        self, fixes: list[ContextItem], failure: tuple[str, str] | None = None
    ) -> list[ContextItem]:
        """``fixes`` with each replaced by the newest fix of its failure the hooks
        recorded, each once; with ``failure`` (command as stored, key: the one happening
        now), its newest fix first. Read newest first, not ranked: a search keeps one of
        near-identical fixes, not necessarily the newest."""
        if failure is None and not any(_key(fix) for fix in fixes):
            return fixes
        page = await self.engine.browse(context_types=["skill"], tags=[FIX_TAG], limit=_NEWEST_READ)
        latest = _latest(page.items)
        first = [latest[failure]] if failure in latest else []
        chosen: dict[str, ContextItem] = {}
        for fix in (*first, *fixes):
            key = _key(fix)
            replaced = latest.get(key, fix) if key is not None else fix
            chosen.setdefault(replaced.id, replaced)
        return list(chosen.values())

    async def with_fixes(self, items: list[ContextItem]) -> list[ContextItem]:
        """``items`` with each failure that was fixed replaced by its fix (which quotes
        the failure): the agent asking about an error wants how it was resolved, and the
        two texts together would be near-duplicates."""
        shown: dict[str, ContextItem] = {}
        for item in items:
            fix = await self.fix_of(item) if ERROR_TAG in item.tags else None
            chosen = fix or item
            shown.setdefault(chosen.id, chosen)
        return await self.newest(list(shown.values()))

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
        metadata = {
            **provenance(client, payload),
            "command": failure.command,
            "failure": failure_key(self.as_stored(error)),  # of the text as stored
        }
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
        if isinstance(error.metadata.get("failure"), str):
            metadata["failure"] = error.metadata["failure"]
        await self._store(client, payload, content, "skill", metadata, (FIX_TAG,))
