"""Keep a vector index in few pieces: LanceDB's ``optimize()`` adds a delta per call.

Every maintenance folds the rows added since the last one into the vector index as a new
*delta* (a small index of its own) and never merges deltas: LanceDB's Python API has no
option for it. A query searches ``nprobes`` partitions of every delta, so a store maintained
every 25 writes slows down as it is used: after 250 loop iterations at 100k items the index
had 59 deltas (58 of ~5 rows each) and the hook's retrieval took p50 56 / p99 101 ms; at
100k a vector query costs 4.3 ms with one piece, 8.4 ms with six.

Lance itself merges deltas (``optimize_indices(num_indices_to_merge=N)``); ``pylance`` (the
same Lance version LanceDB is built on, in the low-priority upkeep process) does it in tens
of milliseconds, where rebuilding the
index takes seconds (4.8 s at 100k on two cores). The policy is a small log-structured merge:
the deltas are merged into one as soon as there are two (cheap: they are small), and into the
base too once they hold a tenth of its rows (a rewrite of the whole index, rare).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ralph_context._logging import get_logger
from ralph_context.storage.maintenance.upkeep import in_memory, operation_target
from ralph_context.storage.maintenance.upkeep_worker import worker

__all__ = ["INDEX", "merge_deltas"]

log = get_logger("ralph_context.storage")

# The vector index's name (LanceDB names an index "<column>_idx"); the store uses it too.
INDEX = "vector_idx"
# The deltas join the base once they hold this share of its rows.
FULL_MERGE_SHARE = 0.1


def merge_deltas(table: Any, delta_rows: int, options: Mapping[str, str] | None = None) -> int:
    """Merge ``table``'s vector index deltas; returns the rows still outside the base.

    ``delta_rows`` is how many rows the deltas hold (the caller counts what maintenance
    folded in since the last full merge). A table in memory (``memory://``, not shared with
    pylance) or without a vector index is left as it is. ``options``: the table's storage
    options (an object store's endpoint and credentials).
    """
    if in_memory(table):
        return delta_rows
    stats = table.index_stats(INDEX)
    if stats is None or stats.num_indices <= 1:
        return 0 if stats is not None else delta_rows
    base = max(1, int(stats.num_indexed_rows) - delta_rows)
    full = delta_rows >= FULL_MERGE_SHARE * base
    merged = stats.num_indices if full else stats.num_indices - 1
    if merged < 2:
        return delta_rows
    worker().run(
        {
            "op": "optimize_indices",
            **operation_target(table, options),
            "names": [INDEX],
            "merge": merged,
        }
    )
    # LanceDB's handle does not look for commits made by another library: reload it.
    table.checkout_latest()
    log.info("vector_index_merged", pieces=stats.num_indices, merged=merged, full=full)
    return 0 if full else delta_rows
