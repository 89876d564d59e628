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
(ages, states, summaries, archive, pruning), ``store_iterations`` (iteration results),
``store_upkeep`` (maintenance, indexes, stats) and ``store_forget`` (forgets a crash cannot
leave half done).
"""

from __future__ import annotations

from datetime import timedelta

from ralph_context._logging import get_logger
from ralph_context.config import StorageSettings
from ralph_context.object_location import Location
from ralph_context.storage.maintenance.caches import CacheSizes
from ralph_context.storage.store.forget import StoreForget
from ralph_context.storage.store.items import StoreItems
from ralph_context.storage.store.iterations import StoreIterations
from ralph_context.storage.store.lifecycle import AgeRow, Forgettable, StoreLifecycle
from ralph_context.storage.store.upkeep import (
    MaintenanceReport,
    StoreStats,
    StoreUpkeep,
)

__all__ = ["AgeRow", "Forgettable", "LanceStore", "MaintenanceReport", "StoreStats"]

log = get_logger("ralph_context.storage")


class LanceStore(StoreForget, StoreLifecycle, StoreItems, StoreIterations, StoreUpkeep):
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
        replica_url: On object storage, where this replica takes the others' writes while
            it holds the lease (``forwarding``).
        caches: How large LanceDB's index and metadata caches may grow (``caches``).
        damaged: ``read_only`` on a store found damaged (``damage``): what cannot be read
            is counted as nothing rather than refusing the open.

    Raises:
        StoreLocked: Another process writes the store (not when ``read_only``).
        StoreError: ``read_only`` and there is no store at ``location`` yet.
    """

    @classmethod
    def configured(
        cls,
        location: Location | None,
        settings: StorageSettings,
        *,
        model: tuple[str, int] | None,
        read_only: bool = False,
        lock_at: Location | None = None,
        damaged: bool = False,
    ) -> LanceStore:
        """The store at ``location`` opened as ``storage:`` says (index, retention, refresh,
        lease and cache settings), for ``model`` (its id and dimension, ``None``: none
        loaded); a writer's open first finishes a forget a crash interrupted."""
        model_id, dimension = model if model else (None, None)
        store = cls(
            location,
            model_id=model_id,
            dimension=dimension,
            vector_index_min_rows=settings.vector_index_min_rows,
            version_retention=timedelta(minutes=settings.version_retention_minutes),
            read_only=read_only,
            lock_at=lock_at,
            refresh=timedelta(seconds=settings.refresh_seconds),
            lease_seconds=settings.lease_seconds,
            replica_url=settings.replica_url,
            caches=CacheSizes.of(settings),
            io_uring=settings.io_uring,
            damaged=damaged,
        )
        if not read_only:
            try:
                store.finish_forget()  # a forget a crash interrupted (store_forget)
            except Exception as exc:  # its plan stays: the next forget or open runs it again
                log.error("interrupted_forget_not_finished", error=f"{type(exc).__name__}: {exc}")
        return store
