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

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from lancedb.index import IvfSq

from ralph_context.storage.maintenance.upkeep_worker import worker

__all__ = ["build_vector_index", "in_memory", "kept_for_readers", "operation_target", "tidy"]


def build_vector_index(
    table: Any, partitions: int, options: Mapping[str, str] | None = None
) -> None:
    """Train ``table``'s vector index (IVF_SQ, cosine, ``partitions`` lists), replacing any.

    Training reads every vector and runs k-means: ~0.2 s at 5k rows, seconds at 100k. In
    the writer's process it ran at the searches' priority (a search beside it: ~50 ms
    against ~27); in the upkeep child it gives way to them like the rest of maintenance.
    """
    if in_memory(table):
        table.create_index(
            "vector", config=IvfSq(distance_type="cosine", num_partitions=partitions), replace=True
        )
        return
    where = operation_target(table, options)
    worker().run({"op": "vector_index", **where, "partitions": partitions})
    table.checkout_latest()  # LanceDB's handle does not look for other libraries' commits


def operation_target(table: Any, options: Mapping[str, str] | None) -> dict[str, Any]:
    """The part of an upkeep operation's request that names ``table`` for the child: its
    URI and storage options (an object store's endpoint, credentials)."""
    return {"uri": str(table.uri), "options": dict(options or {})}


def in_memory(table: Any) -> bool:
    """True for a table pylance cannot open (LanceDB's in-memory store)."""
    uri = str(getattr(table, "uri", ""))
    return not uri or uri.startswith("memory://")


def tidy(
    table: Any,
    *,
    options: Mapping[str, str] | None = None,
    skip_indexes: Collection[str] = (),
    cleanup_older_than: timedelta | None = None,
    delete_unverified: bool = False,
    shared: bool = False,
    readers_grace: timedelta = timedelta(minutes=1),
    scrub: bool = False,
    rebuild: Sequence[tuple[str, Any]] = (),
) -> None:
    """Compact ``table``'s small files (a file is rewritten without its deleted rows once
    half of them are: a mass archive deletes 128 at a time, and at Lance's default of 10%
    the hot table's big files were rewritten again and again, p99 1.45 s at 57k items),
    fold new and moved rows into its indexes (but those named in ``skip_indexes``) and,
    with ``cleanup_older_than``, delete versions older than that.

    ``options``: the table's storage options (an object store's endpoint, credentials).
    ``shared``: other processes (replicas) read and write the table too. A version one of
    them may still read is then never deleted, however old (see :func:`kept_for_readers`),
    and neither are files no version names yet (another replica's write in progress).

    ``scrub``: rewrite every file holding a deleted row, whatever their share (so a
    forgotten or rewritten row leaves the newest version's files), and fold the changes into
    every index but those of ``rebuild`` (``(column, config)`` pairs), which are built again
    from the rows: compaction remaps an index's row addresses but a label index keeps the
    values of the rows it dropped (measured: a forgotten tag stayed in the tags index's
    lookup file). ``skip_indexes`` is then ignored.

    The work runs in the low-priority upkeep process (``upkeep_worker``); LanceDB's handle
    is reloaded afterwards, as it does not look for commits made elsewhere.
    """
    if in_memory(table):
        table.optimize(cleanup_older_than=cleanup_older_than, delete_unverified=delete_unverified)
        return
    where = operation_target(table, options)
    upkeep = worker()
    upkeep.run({"op": "compact", **where, **({"deletions_threshold": 0.0} if scrub else {})})
    indexes = table.list_indices()
    rebuilt = {column for column, _ in rebuild}
    skipped = {i.name for i in indexes if set(i.columns) & rebuilt} if scrub else skip_indexes
    names = [index.name for index in indexes if index.name not in skipped]
    if names:
        upkeep.run({"op": "optimize_indices", **where, "names": names})
    if rebuild:
        table.checkout_latest()
        for column, config in rebuild:
            table.create_index(column, config=config, replace=True)
    if cleanup_older_than is not None:
        if shared:
            table.checkout_latest()
            cleanup_older_than = kept_for_readers(
                table.list_versions(), cleanup_older_than, readers_grace, datetime.now()
            )
            delete_unverified = False
        upkeep.run(
            {
                "op": "cleanup",
                **where,
                "older_than_seconds": cleanup_older_than.total_seconds(),
                "delete_unverified": delete_unverified,
            }
        )
    table.checkout_latest()


def kept_for_readers(
    versions: Sequence[Mapping[str, Any]],
    older_than: timedelta,
    grace: timedelta,
    now: datetime,
) -> timedelta:
    """The cleanup age that deletes no version another reader may still be on.

    Lance deletes the versions *committed* before the cutoff, but a reader is on the
    version that was latest when it last looked: one committed long ago and replaced a
    moment ago (the version before a compaction) is still read for up to ``grace`` (the
    replicas' refresh interval plus a read's length). So the cutoff moves back to the
    oldest version replaced less than ``grace`` ago. ``versions``: LanceDB's
    ``list_versions()`` (``version``, naive local ``timestamp``); ``now`` likewise.
    """
    stamps: list[tuple[int, datetime]] = sorted(
        (int(v["version"]), v["timestamp"]) for v in versions
    )
    replaced_recently = [
        committed for (_, committed), (_, replaced) in pairwise(stamps) if now - replaced < grace
    ]
    if not replaced_recently:
        return older_than
    # A second more: Lance keeps a version committed exactly at the cutoff, but clocks differ.
    return max(older_than, now - min(replaced_recently) + timedelta(seconds=1))
