"""Each item's place in the store's order, and which places are its neighbours.

The ``sequence`` column numbers items in the order the store received them. Items of one
thread (same source, same iteration: a conversation's session, a loop's iteration) that sit
at consecutive places are neighbours; retrieval lets their matches count towards each other.
Stores written before the column existed get it on open, empty: their old items have no
place and so no neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ralph_context.models import ContextItem, ContextType
from ralph_context.storage.table.filters import ItemFilter

__all__ = ["SEQUENCE", "ensure_column", "last_place", "neighbour_filter", "place", "same_thread"]

SEQUENCE = "sequence"


def place(item: ContextItem) -> tuple[str, int, int] | None:
    """``(source, iteration, sequence)`` of an item that can have neighbours, else ``None``.

    A thread is what one source stored in one iteration: a conversation's session, a loop's
    iteration. Items with no source (nobody said where they came from) and skills (lessons
    that stand alone, often imported in bulk) have no neighbours.
    """
    if item.sequence is None or not item.source or item.content_type is ContextType.SKILL:
        return None
    return item.source, item.created_iteration, item.sequence


def ensure_column(table: Any) -> None:
    """Add the (nullable) column to a table written before it existed."""
    if SEQUENCE not in table.schema.names:
        table.add_columns(pa.field(SEQUENCE, pa.int64(), nullable=True))


def last_place(table: Any) -> int:
    """The highest place given so far, -1 for none."""
    column = table.search().select([SEQUENCE]).limit(None).to_arrow()
    last = pc.max(column.column(SEQUENCE)).as_py() if column.num_rows else None
    return -1 if last is None else int(last)


def neighbour_filter(items: Sequence[ContextItem], where: ItemFilter) -> tuple[ItemFilter, int]:
    """``where`` narrowed to the places right before and after ``items`` (not their own), and
    how many places that is (0: nothing to look up)."""
    given = {item.sequence for item in items if item.sequence is not None}
    wanted = sorted(n for n in {n + step for n in given for step in (-1, 1)} - given if n >= 0)
    return replace(where, sequences=tuple(wanted)), len(wanted)


def same_thread(found: ContextItem, items: Sequence[ContextItem]) -> bool:
    """True when ``found`` shares a source and iteration with one of ``items``."""
    return any(
        found.source == item.source and found.created_iteration == item.created_iteration
        for item in items
    )
