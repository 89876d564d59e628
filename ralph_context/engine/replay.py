"""Captures stored after the fact: what the agents' hooks spooled while no server ran.

A spooled capture was made before the server took it; a forget may have come in between
(``ralph-context forget`` opens the store itself when no server runs). Its item would then
bring back the text the forget deleted, so while the spool is taken (``replayed_since``,
around each payload) an item whose text a forget tombstoned after the capture is refused
(``ItemForgotten``; the spool's taker logs it and goes on). A capture made after the forget
is a new memory and is stored, as is any live one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

from ralph_context.actors.storage.actor import StorageActor
from ralph_context.errors import ItemForgotten
from ralph_context.models import ContextItem
from ralph_context.storage.lifecycle.tombstones import CONTENT

__all__ = ["refuse_replayed", "replayed_since"]

# When the capture being stored now was made, while a spool is taken (a task started
# meanwhile inherits it, as a hook's deferred stores are).
_CAPTURED_AT: ContextVar[datetime | None] = ContextVar("captured_at", default=None)


@contextmanager
def replayed_since(captured_at: datetime | None) -> Iterator[None]:
    """Store what runs inside as a capture made at ``captured_at`` (``None``: unknown, a
    spool written by an earlier version: taken as made before any forget)."""
    token = _CAPTURED_AT.set(captured_at or datetime.min.replace(tzinfo=UTC))
    try:
        yield
    finally:
        _CAPTURED_AT.reset(token)


def refuse_replayed(storage: StorageActor, items: Sequence[ContextItem]) -> None:
    """Raises ``ItemForgotten`` when a capture being replayed holds an item whose text a
    forget deleted after the capture was made.

    Raises:
        ItemForgotten: As above; nothing is stored.
    """
    captured = _CAPTURED_AT.get()
    if captured is None:
        return
    for item in items:
        when = storage.forgotten_at(CONTENT, item.content)
        if when is not None and when >= captured:
            raise ItemForgotten(
                f"a capture spooled before a forget holds an item that {ItemForgotten.MARK} "
                "since: it is not stored again"
            )
