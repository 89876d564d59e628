"""Rows of a table on object storage, kept in the replica by row address.

On object storage a search's own work is cheap (the indexes sit in LanceDB's cache after
the first queries); what costs is fetching the result rows: several ranged GETs per query,
each a round trip (the issue measured 12-18 per query, ~10x a local disk). A replica serving
a team's loops asks for the same hot rows again and again, so the queries there return only
row addresses (and their distance or score) and the rows come from this cache, fetched in
one ``take`` when missing.

No invalidation is needed: a row address (fragment id, offset) names one row for the life
of the table. Lance never changes a data file: a deletion hides rows, an update or a state
change writes the row again under a new address, and compaction writes new fragments under
ids never used before. The only write that starts addresses over, the overwrite of
``reindex``, is done with the replicas stopped (README), and a reopened store starts with an
empty cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

__all__ = ["ROW_ID", "RowCache"]

ROW_ID = "_rowid"


class RowCache:
    """At most ``capacity`` rows of one table, least recently used dropped first.

    At 384-d, a row (vector, content, metadata) is ~2-3 kB: 20,000 rows ~50 MB.
    Thread-safe: the store's reads run in several worker threads.
    """

    def __init__(self, capacity: int = 20_000) -> None:
        self.capacity = capacity
        self._rows: OrderedDict[int, pa.Table] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        """Drop every row (after a scrub: a forgotten or redacted row must not stay in
        memory either, though no query would name its address again)."""
        with self._lock:
            self._rows.clear()

    def take(
        self, table: Any, row_ids: Sequence[int], fetch: Callable[[Any, list[int]], pa.Table]
    ) -> tuple[pa.Table, list[int]]:
        """The rows at ``row_ids`` in that order, and their ids (an id no longer in the
        table is left out). ``fetch(table, ids)``: the missing rows, with ``_rowid``."""
        with self._lock:
            missing = [i for i in dict.fromkeys(row_ids) if i not in self._rows]
            self.hits += len(row_ids) - len(missing)
            self.misses += len(missing)
        fetched: dict[int, pa.Table] = {}
        if missing:
            answer = fetch(table, missing)
            rows = answer.drop_columns([ROW_ID])
            for n, row_id in enumerate(answer.column(ROW_ID).to_pylist()):
                fetched[int(row_id)] = rows.slice(n, 1)
        picked: list[pa.Table] = []
        present: list[int] = []
        with self._lock:
            self._rows.update(fetched)
            for row_id in row_ids:
                row = self._rows.get(row_id)
                if row is not None:
                    self._rows.move_to_end(row_id)
                    picked.append(row)
                    present.append(row_id)
            while len(self._rows) > self.capacity:
                self._rows.popitem(last=False)
        if not picked:
            return table.schema.empty_table(), []
        return pa.concat_tables(picked), present
