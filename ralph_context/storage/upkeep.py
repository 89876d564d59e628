"""Table upkeep in its parts, each on its own cadence: compaction, index refresh, cleanup.

LanceDB's ``optimize()`` does everything at every call. Measured on a loop's store (57k
items, 5 rows added since the last call) it took 0.36-0.72 s, of which compaction 0.013 s,
the scalar and vector indexes ~0.1 s, the full-text index 0.14-0.19 s (it rewrites the whole
index for 5 rows) and the cleanup of old versions 0.16-0.17 s (it lists every file of the
table). A loop maintained every 25 writes spent 64 of its 90 seconds there, and each pass
competed with the loop's searches for the two cores. Here compaction and the cheap indexes
run every time; the caller decides when the full-text index and the cleanup are due.

Lance's own binding (``pylance``, at the version LanceDB is built on) runs the parts, in a
process of the lowest priority (``upkeep_worker``); a table in memory (``memory://``, which
pylance cannot reach) gets LanceDB's ``optimize()``.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import Any

from ralph_context.storage.upkeep_worker import worker

__all__ = ["in_memory", "tidy"]


def in_memory(table: Any) -> bool:
    """True for a table pylance cannot open (LanceDB's in-memory store)."""
    uri = str(getattr(table, "uri", ""))
    return not uri or uri.startswith("memory://")


def tidy(
    table: Any,
    *,
    skip_indexes: Collection[str] = (),
    cleanup_older_than: timedelta | None = None,
    delete_unverified: bool = False,
) -> None:
    """Compact ``table``'s small files (a file is rewritten without its deleted rows once
    half of them are: a mass archive deletes 128 at a time, and at Lance's default of 10%
    the hot table's big files were rewritten again and again, p99 1.45 s at 57k items),
    fold new and moved rows into its indexes (but those named in ``skip_indexes``) and,
    with ``cleanup_older_than``, delete versions older than that.

    The work runs in the low-priority upkeep process (``upkeep_worker``); LanceDB's handle
    is reloaded afterwards, as it does not look for commits made elsewhere.
    """
    if in_memory(table):
        table.optimize(cleanup_older_than=cleanup_older_than, delete_unverified=delete_unverified)
        return
    uri = str(table.uri)
    upkeep = worker()
    upkeep.run({"op": "compact", "uri": uri})
    names = [index.name for index in table.list_indices() if index.name not in skip_indexes]
    if names:
        upkeep.run({"op": "optimize_indices", "uri": uri, "names": names})
    if cleanup_older_than is not None:
        upkeep.run(
            {
                "op": "cleanup",
                "uri": uri,
                "older_than_seconds": cleanup_older_than.total_seconds(),
                "delete_unverified": delete_unverified,
            }
        )
    table.checkout_latest()
