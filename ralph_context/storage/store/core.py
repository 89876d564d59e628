"""The LanceDB store's open state, which every other part of ``LanceStore`` builds on.

Opening: the writer lock, the connection, the tables with their schema and scalar indexes
(created or migrated when missing), the model record (``store.json``) and the indexes
warmed into the cache. Kept from then on: the running counts (rows with a vector, rows no
index covers, hot rows by type and state), the index facts, the iteration clock, and the
helpers that turn a filter into a clause and a row into an item.
"""

from __future__ import annotations

import math
import time
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
from lancedb.index import FTS, Bitmap, BTree, LabelList

from ralph_context._logging import get_logger
from ralph_context.errors import ModelMismatch, StoreDamaged, StoreError, StoreUnwritable
from ralph_context.models import ContextItem
from ralph_context.object_location import Location, ObjectLocation
from ralph_context.storage import private, writer_lock
from ralph_context.storage.integrity import damage
from ralph_context.storage.integrity.checksums import Ledger
from ralph_context.storage.lifecycle.archive import ArchiveStore
from ralph_context.storage.lifecycle.tombstones import TOMBSTONES, Tombstones, tombstones_schema
from ralph_context.storage.maintenance.caches import CacheSizes
from ralph_context.storage.maintenance.index_merge import INDEX as VECTOR_INDEX
from ralph_context.storage.maintenance.upkeep import tidy
from ralph_context.storage.meta import REINDEX_HINT, StoreRecord, reconcile
from ralph_context.storage.replicas.lease import MaintenanceLease
from ralph_context.storage.replicas.row_cache import RowCache
from ralph_context.storage.store_key import StoreKey
from ralph_context.storage.table import json_metadata, threads
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.pack_space import PackSpace
from ralph_context.storage.table.requests import REQUEST_KEYS, RequestLog, request_keys_schema
from ralph_context.storage.table.schema import (
    ITEMS,
    ITERATIONS,
    item_from_row,
    items_schema,
    iterations_schema,
    writable,
)
from ralph_context.storage.table.tally import Tally
from ralph_context.storage.table.uring import SearchTable, open_search_table
from ralph_context.storage.table.usage import USAGE, UsageLedger, usage_schema
from ralph_context.storage.table.vectors import probes

log = get_logger("ralph_context.storage")
TEXT_INDEX = "content_idx"

STORAGE_OPTIONS = {"new_table_data_storage_version": "2.1"}
# Filters on type/state/tags/id and the text tier; built when missing (new or rewritten table).
_SCALAR_INDEXES = (
    ("id", BTree()),
    ("content_type", Bitmap()),
    ("state", Bitmap()),
    ("tags", LabelList()),
    ("content", FTS()),
    (threads.SEQUENCE, BTree()),
)
# The indexes holding the items' own words (the others hold ids, numbers and fixed names):
# a scrub builds them again, since compaction leaves a deleted row's values in them.
TEXT_BEARING = tuple((c, config) for c, config in _SCALAR_INDEXES if c in ("tags", "content"))


def options_for(location: Location | None) -> dict[str, str]:
    """LanceDB's ``storage_options`` for a store at ``location``: the file format (below)
    and, on object storage, the object store's own (endpoint, credentials)."""
    extra = location.lance_options if isinstance(location, ObjectLocation) else {}
    return {**STORAGE_OPTIONS, **extra}


class StoreCore:
    """The tables, the model record and the state the parts of the store share; the
    arguments are :class:`~ralph_context.storage.lance_store.LanceStore`'s.
    """

    def __init__(
        self,
        location: Location | None,
        *,
        model_id: str | None,
        dimension: int | None,
        vector_index_min_rows: int = 5_000,
        version_retention: timedelta = timedelta(minutes=5),
        read_only: bool = False,
        lock_at: Location | None = None,
        refresh: timedelta = timedelta(seconds=1),
        lease_seconds: float = 30.0,
        replica_url: str | None = None,
        caches: CacheSizes | None = None,
        io_uring: bool = True,
        damaged: bool = False,
    ) -> None:
        self.location = location
        self._io_uring = io_uring
        self._caches = caches or CacheSizes()
        # On object storage several processes (replicas) write the store: LanceDB resolves
        # their commits, and each looks for the others' every ``refresh``.
        self.shared = isinstance(location, ObjectLocation)
        self.refresh = refresh
        self._lease_seconds = lease_seconds
        # ... and one at a time maintains it (see ``lease``).
        self.lease = (
            MaintenanceLease(location, lease_seconds, address=replica_url)
            if isinstance(location, ObjectLocation) and not read_only
            else None
        )
        # No writer lock there (see ``writer_lock``): a file lock cannot span machines.
        lock = lock_at or location
        self.lock_at = lock if isinstance(lock, Path) else None
        self.read_only = read_only
        # Opened on a store found damaged (``damage``): read-only, and the counts a
        # damaged file makes unreadable are 0 (searches may fail; export salvages).
        self.damaged = damaged and read_only
        self._closed = read_only  # nothing to release
        self.vector_index_min_rows = vector_index_min_rows
        self.version_retention = version_retention
        # Why this open holds no writer lock though it means to write: the disk refused
        # the lock file. Nothing may be written until the lock is taken (a new open, once
        # the disk takes writes: ``actors.storage.unwritable``); never two writers.
        self.lock_owed: StoreUnwritable | None = None
        # The checksums of committed files (``checksums``), read at the first seal.
        self._ledger: Ledger | None = None
        if self.lock_at is not None and not read_only:
            private.secure(self.lock_at)
            try:
                writer_lock.acquire(self.lock_at)
            except StoreUnwritable as exc:
                self.lock_owed = exc
                self._closed = True  # holds no lock to release
        try:
            self._open(model_id, dimension)
        except BaseException as exc:  # re-raised: the lock is given up whatever ended it
            self.close()
            if isinstance(location, Path) and damage.lance_error(exc):
                try:  # a raw Lance error: name the damaged file, if that is what it is
                    damage.raise_if_damaged(location)
                except StoreDamaged as found:
                    raise found from exc
            raise

    def _open(self, model_id: str | None, dimension: int | None) -> None:
        location = self.location
        recorded = StoreRecord.read(location)
        self.model_id, self.dimension = reconcile(
            recorded, model_id, dimension, str(location or "memory")
        )
        # Rows the vector index was trained on: it is retrained once the table doubles.
        self._indexed_rows = recorded.vector_index_rows if recorded else 0
        uri = str(location) if location is not None else f"memory://ralph-context-{id(self)}"
        # One session, bounded (see ``caches``), for the store's connections.
        self._session = self._caches.session(location)
        self._db = lancedb.connect(
            uri,
            storage_options=self.storage_options,
            read_consistency_interval=self._consistency(),
            session=self._session,
        )
        self._vector_index = False
        self._index_looked_up = 0.0  # when (monotonic), 0: never
        # On object storage, the hot table's rows by address (see ``row_cache``).
        self.row_cache = RowCache() if self.shared else None
        self._nprobes = 8
        self.items = self._open_items()
        # Asked once: the property reads the manifest on every call, and rows must not be
        # built with the reported type of the JSON column (see ``schema.writable``).
        self._items_schema = writable(self.items.schema)
        self._metadata_json = json_metadata.is_json(self.items)
        self.iterations = self._table(ITERATIONS, iterations_schema())
        self.usage = UsageLedger(self._table(USAGE, usage_schema()))
        # Keys and tombstones are kept as digests under the store's own key (store_key).
        self.key = StoreKey.of(location, read_only=self.read_only)
        self.requests = RequestLog(
            self._table(REQUEST_KEYS, request_keys_schema(), needed=False),
            claims=location if isinstance(location, ObjectLocation) else None,
            key=self.key,
        )
        if not self.read_only and self.requests.migrate():
            # The raw keys stay in the table's deleted rows and old versions: off the disk.
            tidy(
                self.requests.table,
                options=self.storage_options,
                cleanup_older_than=timedelta(0),
                delete_unverified=not self.shared,
                shared=self.shared,
                scrub=True,
            )
        self.tombstones = Tombstones(
            self._table(TOMBSTONES, tombstones_schema(), needed=False),
            self.key,
            shared=self.shared,
            refresh=self.refresh.total_seconds(),
        )
        self.archive = ArchiveStore(
            location,
            self.dimension,
            options=self.storage_options,
            consistency=self._consistency(),
            shared=self.shared,
            session=self._session,
        )
        if self.locked:
            self.archive.migrate_metadata()
        self.packs = PackSpace(self._db, self.dimension)
        self.searcher = self._search_table()
        counted = partial(damage.counted, self.damaged)  # 0 where a damaged file is
        self._vector_rows = counted(lambda: self.items.count_rows("vector IS NOT NULL"))
        # Hot rows by type and state, kept by this process's writes (none when reading
        # beside another writer, or when other replicas write too).
        self._tally = None if self.read_only or self.shared else Tally(self.items)
        # Rows added or rewritten (an update moves a row) since the last maintenance: no
        # index covers them, so every search scans them (8,000 aged rows cost a full-text
        # query 5 -> 60 ms at 100k); maintenance folds them in.
        self.unindexed_rows = 0
        # Rows in the vector index's deltas rather than its base (see index_merge), rows
        # outside the full-text index, and when old versions were last cleaned up.
        self._delta_rows = 0
        self._text_pending = 0
        self._cleaned_at = -math.inf
        self._next_sequence = counted(lambda: threads.last_place(self.items) + 1)
        self._latest: int | None = None
        self._latest_read_at = -math.inf
        self.prewarm()
        # Written only now that the table agreed with the model: a refused open changes nothing.
        if (
            self.locked
            and self.model_id is not None
            and (recorded is None or recorded.model_id is None)
        ):
            self._write_record()

    @property
    def locked(self) -> bool:
        """True when this open may write: not read-only, and holding the writer lock (or
        needing none: in memory, on object storage)."""
        return not self.read_only and self.lock_owed is None

    def close(self) -> None:
        """Give up this store's writer lock (see ``writer_lock``) or maintenance lease; the
        tables stay readable until the object goes, but another process may write them (or
        maintain them) from now on."""
        if self.lease is not None:
            self.lease.release()
        if self.lock_at is not None and not self._closed:
            self._closed = True
            writer_lock.release(self.lock_at)

    def _write_record(self) -> None:
        StoreRecord(self.model_id, self.dimension, self._indexed_rows).write(self.location)

    # --- tables ----------------------------------------------------------------------------

    def _consistency(self) -> timedelta | None:
        """A reader beside another process's writer checks for its commits on every read
        (a manifest read); the writer sees its own writes anyway; a replica on object
        storage checks for the others' every ``refresh`` (a manifest read there is a
        request: ~5-20 ms, so not on every read)."""
        if self.shared:
            return self.refresh
        return timedelta(0) if self.read_only else None

    @property
    def storage_options(self) -> dict[str, str]:
        """LanceDB's options for this store's tables: the object store's own (endpoint,
        credentials) on object storage.

        Lance file format 2.1: it reads scattered rows ~4 ms faster per query than the
        default (2.0) at 100k items, and a vector search materialises every candidate row.
        """
        return options_for(self.location)

    def _table(self, name: str, schema: pa.Schema, *, needed: bool = True) -> Any:
        """Table ``name``, created empty if missing. Reading only, a missing table is
        refused, or ``None`` if not ``needed`` (one that stores written before it existed
        lack)."""
        if name in self._db.list_tables().tables:
            return self._db.open_table(name)
        if self.read_only and not needed:
            return None
        if self.read_only:
            raise StoreError(
                f"no store at {self.location} yet (no {name} table): a read-only open never "
                "creates one"
            )
        return self._db.create_table(name, schema=schema)

    def _search_table(self) -> SearchTable | None:
        """The hot table's search handle (see ``uring``): a local store this process
        writes. Beside another writer (read-only) the store's handle looks for its commits
        on every read, which the search handle would not."""
        if self.read_only or not isinstance(self.location, Path):
            return None
        self._search_session = self._caches.search_session(self.location)
        return open_search_table(
            self.location, ITEMS, session=self._search_session, io_uring=self._io_uring
        )

    def cache_bytes(self) -> int:
        """What the store's caches hold now: its session's and its search handle's."""
        searched = self._search_session.size_bytes() if self.searcher is not None else 0
        return int(self._session.size_bytes) + searched

    def _open_items(self) -> Any:
        table = self._table(ITEMS, items_schema(self.dimension))
        stored = table.schema.field("vector").type
        if stored.list_size != self.dimension:
            raise ModelMismatch(
                f"the store's vectors are {stored.list_size}-d but the model makes "
                f"{self.dimension}-d ones; {REINDEX_HINT}"
            )
        if not self.locked:
            return table
        if json_metadata.migrate(table):
            table = self._db.open_table(ITEMS)
        threads.ensure_column(table)
        indexed = {tuple(index.columns) for index in table.list_indices()}
        for column, config in _SCALAR_INDEXES:
            if (column,) not in indexed:
                table.create_index(column, config=config)
        return table

    def _where(self, where: ItemFilter) -> str | None:
        """``where`` as a clause on the hot table.

        Raises:
            StoreError: A metadata filter on a store whose metadata is still text (read
                beside a writer of an older version, which has not moved it).
        """
        if where.metadata and not self._metadata_json:
            raise StoreError(
                f"the store at {self.location} keeps metadata as text, which cannot be "
                "filtered; it is moved to Lance JSON when this version opens it to write"
            )
        return where.to_sql()

    def _item(self, row: dict[str, Any]) -> ContextItem:
        return self.usage.apply(item_from_row(row))

    def has_vector_index(self) -> bool:
        """True once an IVF index covers the vector column.

        Looked up once per open (0.6 ms a call), then tracked: this store builds the index
        itself, and only a rewrite (reindex) drops it, which reopens the store. On object
        storage another replica may build it: looked up again once per lease period.
        """
        again = self.shared and time.monotonic() - self._index_looked_up > self._lease_seconds
        if not self._vector_index and (not self._index_looked_up or again):
            self._index_looked_up = time.monotonic()
            self._vector_index = any(
                index.columns == ["vector"] for index in self.items.list_indices()
            )
            if self._vector_index:
                self._nprobes = probes(self.items.count_rows())
        return self._vector_index

    def prewarm(self) -> None:
        """Load the vector and full-text indexes into LanceDB's cache at open, not on the
        first queries that touch each part: at 1M items the first 300 queries after an open
        took p99 190 ms loading index partitions, 43 ms once loaded (the load: 0.4 s,
        ~0.5 GB). Not after maintenance: every merge or refresh writes index files under a
        new id, and loading each whole kept the old ones' partitions in the cache too (the
        1M benchmark process grew to 9.5 GB). A damaged index is left to the query path,
        which steps down and repairs it."""
        names = (VECTOR_INDEX, TEXT_INDEX) if self.has_vector_index() else (TEXT_INDEX,)
        for name in names:
            try:
                (self.searcher or self.items).prewarm_index(name)
            except Exception as exc:  # a missing or damaged index: the queries will say
                log.warning("index_not_prewarmed", index=name, error=f"{type(exc).__name__}")

    def latest_iteration(self) -> int:
        """The highest iteration number seen in either table (the lifecycle clock): kept
        by this process's writes, read from the tables when reading beside a writer (and
        on object storage, once per refresh interval: other replicas write too)."""
        age = time.monotonic() - self._latest_read_at
        stale = self.shared and age > self.refresh.total_seconds()
        if self.read_only or self._latest is None or stale:
            self._latest = max(self._scan_latest(), self._latest or 0)
            self._latest_read_at = time.monotonic()
        return self._latest

    def _saw_iteration(self, iteration: int) -> None:
        if self._latest is not None:
            self._latest = max(self._latest, iteration)

    def _scan_latest(self) -> int:
        tables = ((self.iterations, "iteration"), (self.items, "created_iteration"))
        highest = [partial(damage.highest, table, column) for table, column in tables]
        return max(damage.counted(self.damaged, h) for h in highest)
