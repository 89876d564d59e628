"""Rows rewritten in place: the same item (id, place in the store's order, state, counters,
dates) with a new text and vector. ``ralph-context redact`` takes secrets out of a store
written before redaction this way; the old rows stay in old table versions and old data
files until the caller reclaims them (``LanceStore.maintain(reclaim=True)``).

One write per table: the hot table by ``merge_insert`` on ``id`` (as a backfill does), each
archive month by ``merge_insert`` on ``id`` and ``reason`` (a month may hold an item's
archived row and its original).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem
from ralph_context.storage.lifecycle.archive import ArchivedItem
from ralph_context.storage.table.schema import item_to_row, writable

if TYPE_CHECKING:
    from ralph_context.storage.store.core import StoreCore

__all__ = ["Rewritten", "rewrite_rows"]

Rewritten = tuple[ArchivedItem, ContextItem, Vectors | None]


def rewrite_rows(
    store: StoreCore,
    hot: Sequence[tuple[ContextItem, Vectors | None]],
    archived: Sequence[Rewritten],
) -> int:
    """Replace hot rows by ``hot`` and archive rows by ``archived`` (each the row as read,
    the item to write in its place and its vector); returns rows written."""
    written = 0
    if hot:
        rows = [item_to_row(item, vector) for item, vector in hot]
        table = pa.Table.from_pylist(rows, schema=store._items_schema)
        store.items.merge_insert("id").when_matched_update_all().execute(table)
        store.unindexed_rows += len(rows)
        written += len(rows)
    by_month: dict[str, list[Rewritten]] = defaultdict(list)
    for entry in archived:
        by_month[entry[0].table].append(entry)
    for month, entries in by_month.items():
        target = store.archive._table(month)
        rows = []
        for was, item, vector in entries:
            row = item_to_row(item, vector)
            row.update(
                usefulness_score=item.usefulness_score,
                access_count=item.access_count,
                reason=was.reason,
                archived_at=was.archived_at,
            )
            rows.append(row)
        data = pa.Table.from_pylist(rows, schema=writable(target.schema))
        target.merge_insert(["id", "reason"]).when_matched_update_all().execute(data)
        written += len(rows)
    return written
