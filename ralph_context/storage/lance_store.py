"""LanceDB store: blocking calls, run by the storage actor in worker threads.

Layout at ``storage.path``: ``context_items.lance/``, ``iterations.lance/`` and ``store.json``
(the embedding model id and dimension the vectors were made with). ``memory://`` gives the same
store without files, for tests and session-only use.

Why the details below:
- LanceDB's ``_distance`` changes scale once a vector index exists, so similarity is computed
  here from the returned vectors (all unit length) and thresholds mean the same either way.
- Every write is a table version and reads slow down as versions pile up, so writes arrive
  batched from the actor and :meth:`LanceStore.maintain` compacts on a cadence.

One module per job makes up the class: ``store_core`` (the open state: tables, schema,
model record, running counts), ``store_items`` (item reads and writes), ``store_lifecycle``
(ages, states, summaries, archive, pruning), ``store_iterations`` (iteration results) and
``store_upkeep`` (maintenance, indexes, stats).
"""

from __future__ import annotations

from ralph_context.storage.store_items import StoreItems
from ralph_context.storage.store_iterations import StoreIterations
from ralph_context.storage.store_lifecycle import AgeRow, Forgettable, StoreLifecycle
from ralph_context.storage.store_upkeep import MaintenanceReport, StoreStats, StoreUpkeep

__all__ = ["AgeRow", "Forgettable", "LanceStore", "MaintenanceReport", "StoreStats"]


class LanceStore(StoreLifecycle, StoreItems, StoreIterations, StoreUpkeep):
    """The two tables plus the model record. Not thread-safe for writes: one writer at a time.

    Args:
        location: Store directory or object-storage location (see ``object_location``),
            or ``None`` for an in-memory store.
        model_id: The embedding model now loaded, or ``None`` if none could load.
        dimension: That model's vector size (ignored when ``model_id`` is ``None``).
        vector_index_min_rows: Build an IVF index once the table has this many vectors.
        version_retention: How long old table versions are kept by compaction.
        read_only: Open an existing store without its writer lock, to read while another
            process writes it: nothing is created or migrated, every read sees the writer's
            latest commit, and the caller must not write (the storage actor refuses to).
        lock_at: The folder whose writer lock covers this store (default ``location``): a
            namespace's store is covered by the lock of the store folder holding it. None on
            object storage, where replicas share the store.
        refresh: On object storage, how often this replica looks for the others' commits.
        lease_seconds: On object storage, how long the maintenance lease lasts (``lease``).

    Raises:
        StoreLocked: Another process writes the store (not when ``read_only``).
        StoreError: ``read_only`` and there is no store at ``location`` yet.
    """
