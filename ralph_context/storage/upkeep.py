"""Table upkeep in its parts, each on its own cadence: compaction, index refresh, cleanup.

LanceDB's ``optimize()`` does everything at every call. Measured on a loop's store (57k
items, 5 rows added since the last call) it took 0.36-0.72 s, of which compaction 0.013 s,
the scalar and vector indexes ~0.1 s, the full-text index 0.14-0.19 s (it rewrites the whole
index for 5 rows) and the cleanup of old versions 0.16-0.17 s (it lists every file of the
table). A loop maintained every 25 writes spent 64 of its 90 seconds there, and each pass
competed with the loop's searches for the two cores. Here compaction and the cheap indexes
run every time; the caller decides when the full-text index and the cleanup are due.

Lance's own binding (``pylance``, at the version LanceDB is built on) runs the parts; a
table in memory (``memory://``, which pylance cannot reach) gets LanceDB's ``optimize()``.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import Any

__all__ = ["DELETIONS_THRESHOLD", "in_memory", "tidy"]

# A file is rewritten without its deleted rows once this share of them is deleted (Lance's
# default is 10%). A mass archive deletes a store's rows 128 at a time: at 10% the hot
# table's big files were rewritten again and again (compaction p99 1.45 s at 57k items),
# while a deleted row costs a read next to nothing (its index entries are skipped).
DELETIONS_THRESHOLD = 0.5


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
    """Compact ``table``'s small files, fold new and moved rows into its indexes (but those
    named in ``skip_indexes``) and, with ``cleanup_older_than``, delete versions older than
    that. LanceDB's handle is reloaded afterwards: it does not look for another library's
    commits by itself."""
    if in_memory(table):
        table.optimize(cleanup_older_than=cleanup_older_than, delete_unverified=delete_unverified)
        return
    import lance  # pylance: ~0.3 s to import, and only maintenance needs it

    uri = str(table.uri)
    lance.dataset(uri).optimize.compact_files(materialize_deletions_threshold=DELETIONS_THRESHOLD)
    names = [index.name for index in table.list_indices() if index.name not in skip_indexes]
    if names:
        lance.dataset(uri).optimize.optimize_indices(index_names=names)
    if cleanup_older_than is not None:
        lance.dataset(uri).cleanup_old_versions(
            older_than=cleanup_older_than, delete_unverified=delete_unverified
        )
    table.checkout_latest()
