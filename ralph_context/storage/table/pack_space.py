"""The store's LanceDB connection, lent to tool packs for their own tables.

A pack (prompt learning, project memory) keeps its tables next to ``context_items`` in the same
database folder, so one ``storage.path`` holds everything and one actor writes it all. Packs
never get the connection directly from an adapter: their blocking functions run inside the
storage actor (``Engine.in_packs``), one at a time, so a read-modify-write such as a moving
average update cannot interleave with another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["PackSpace"]

T = TypeVar("T")


def _unchanged(text: str) -> str:
    return text


class PackSpace:
    """The connection plus each pack's opened tables (opened once per store, then reused).

    Args:
        db: The LanceDB connection of the open store.
        dimension: Vector size of the store's embedding model; pack vectors use the same.
    """

    def __init__(self, db: Any, dimension: int) -> None:
        self.db = db
        self.dimension = dimension
        # What every text a pack writes passes first (the engine sets its redactor here).
        self.redact: Callable[[str], str] = _unchanged
        self._opened: dict[str, object] = {}

    def tables(self, name: str, factory: Callable[[PackSpace], T]) -> T:
        """The pack's table set ``name``, built by ``factory`` on first use."""
        if name not in self._opened:
            self._opened[name] = factory(self)
        return self._opened[name]  # type: ignore[return-value]
