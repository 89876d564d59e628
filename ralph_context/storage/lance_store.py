"""LanceDB store: blocking calls, run by the storage actor in worker threads.

Layout at ``storage.path``: ``context_items.lance/``, ``iterations.lance/`` and ``store.json``
(the embedding model id and dimension the vectors were made with). ``memory://`` gives the same
store without files, for tests and session-only use.

Why the details below:
- LanceDB's ``_distance`` changes scale once a vector index exists, so similarity is computed
  here from the returned vectors (all unit length) and thresholds mean the same either way.
- Every write is a table version and reads slow down as versions pile up, so writes arrive
  batched from the actor and :meth:`LanceStore.maintain` compacts on a cadence.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import structlog
from lancedb.index import FTS, Bitmap, BTree, IvfSq, LabelList

from ralph_context import namespaces
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import ItemNotFound, ModelMismatch, StoreError
from ralph_context.models import ContextItem, ContextState, ContextType, IterationResult
from ralph_context.storage import json_metadata, reads, threads, writer_lock
from ralph_context.storage.archive import ArchivedItem, ArchiveStore
from ralph_context.storage.filters import ForgetSelection, ItemFilter
from ralph_context.storage.index_merge import INDEX as VECTOR_INDEX
from ralph_context.storage.index_merge import merge_deltas
from ralph_context.storage.meta import REINDEX_HINT, StoreRecord, reconcile
from ralph_context.storage.pack_space import PackSpace
from ralph_context.storage.requests import REQUEST_KEYS, RequestLog, request_keys_schema
from ralph_context.storage.schema import (
    ITEMS,
    ITERATIONS,
    item_from_row,
    item_to_row,
    items_schema,
    iteration_from_row,
    iteration_to_row,
    iterations_schema,
    writable,
)
from ralph_context.storage.tally import Tally, counts
from ralph_context.storage.upkeep import tidy
from ralph_context.storage.usage import USAGE, UsageLedger, usage_schema
from ralph_context.storage.vectors import partitions, probes, vector_list, vector_matrix

__all__ = ["AgeRow", "LanceStore", "MaintenanceReport", "StoreStats"]

log = structlog.get_logger("ralph_context.storage")
_TEXT_INDEX = "content_idx"
# The full-text index takes in new rows once this many (or a sixteenth of a small table)
# are outside it: a query scans them meanwhile (210 rows: +2.5-4 ms a full-text query at
# 40k items), and each refresh rewrites the whole index (0.14-0.19 s at 57k).
_TEXT_BATCH = 64

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


@dataclass(frozen=True)
class StoreStats:
    """What is in the store and what it costs."""

    items: int
    by_type: dict[str, int]
    by_state: dict[str, int]
    without_vector: int
    archived: int
    iterations: int
    latest_iteration: int
    size_bytes: int
    table_version: int
    vector_index: bool
    model_id: str | None
    dimension: int


@dataclass(frozen=True)
class AgeRow:
    """What the lifecycle needs to know about a hot item, without its text or vector."""

    id: str
    content_type: ContextType
    state: ContextState
    created_iteration: int
    usefulness: float


# Ids per IN (...) clause: keeps statements small when thousands of items change state.
_ID_CHUNK = 500


@dataclass(frozen=True)
class MaintenanceReport:
    """What one maintenance pass did."""

    compacted: bool
    vector_index_built: bool
    versions_removed: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


class LanceStore:
    """The two tables plus the model record. Not thread-safe for writes: one writer at a time.

    Args:
        location: Store directory, or ``None`` for an in-memory store.
        model_id: The embedding model now loaded, or ``None`` if none could load.
        dimension: That model's vector size (ignored when ``model_id`` is ``None``).
        vector_index_min_rows: Build an IVF index once the table has this many vectors.
        version_retention: How long old table versions are kept by compaction.
        read_only: Open an existing store without its writer lock, to read while another
            process writes it: nothing is created or migrated, every read sees the writer's
            latest commit, and the caller must not write (the storage actor refuses to).
        lock_at: The folder whose writer lock covers this store (default ``location``): a
            namespace's store is covered by the lock of the store folder holding it.

    Raises:
        StoreLocked: Another process writes the store (not when ``read_only``).
        StoreError: ``read_only`` and there is no store at ``location`` yet.
    """

    def __init__(
        self,
        location: Path | None,
        *,
        model_id: str | None,
        dimension: int | None,
        vector_index_min_rows: int = 5_000,
        version_retention: timedelta = timedelta(minutes=5),
        read_only: bool = False,
        lock_at: Path | None = None,
    ) -> None:
        self.location = location
        self.lock_at = lock_at or location
        self.read_only = read_only
        self._closed = read_only  # nothing to release
        self.vector_index_min_rows = vector_index_min_rows
        self.version_retention = version_retention
        if self.lock_at is not None and not read_only:
            writer_lock.acquire(self.lock_at)
        try:
            self._open(model_id, dimension)
        except BaseException:
            self.close()
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
        # Lance 2.1 reads scattered rows ~4 ms faster per query than the default (2.0) at 100k
        # items, and a vector search materialises every candidate row.
        self._db = lancedb.connect(
            uri, storage_options=STORAGE_OPTIONS, read_consistency_interval=self._consistency()
        )
        self._vector_index = False
        self._index_looked_up = False
        self._nprobes = 8
        self.items = self._open_items()
        # Asked once: the property reads the manifest on every call, and rows must not be
        # built with the reported type of the JSON column (see ``schema.writable``).
        self._items_schema = writable(self.items.schema)
        self._metadata_json = json_metadata.is_json(self.items)
        self.iterations = self._table(ITERATIONS, iterations_schema())
        self.usage = UsageLedger(self._table(USAGE, usage_schema()))
        self.requests = RequestLog(self._table(REQUEST_KEYS, request_keys_schema(), needed=False))
        self.archive = ArchiveStore(
            location, self.dimension, options=STORAGE_OPTIONS, consistency=self._consistency()
        )
        if not self.read_only:
            self.archive.migrate_metadata()
        self.packs = PackSpace(self._db, self.dimension)
        self._vector_rows = int(self.items.count_rows("vector IS NOT NULL"))
        # Hot rows by type and state, kept by this process's writes (none when reading
        # beside another writer).
        self._tally = None if self.read_only else Tally(self.items)
        # Rows added or rewritten (an update moves a row) since the last maintenance: no
        # index covers them, so every search scans them (8,000 aged rows cost a full-text
        # query 5 -> 60 ms at 100k); maintenance folds them in.
        self.unindexed_rows = 0
        # Rows in the vector index's deltas rather than its base (see index_merge), rows
        # outside the full-text index, and when old versions were last cleaned up.
        self._delta_rows = 0
        self._text_pending = 0
        self._cleaned_at = -math.inf
        self._next_sequence = threads.last_place(self.items) + 1
        self._latest: int | None = None
        self.prewarm()
        # Written only now that the table agreed with the model: a refused open changes nothing.
        if (
            not self.read_only
            and self.model_id is not None
            and (recorded is None or recorded.model_id is None)
        ):
            self._write_record()

    def close(self) -> None:
        """Give up this store's writer lock (see ``writer_lock``); the tables stay readable
        until the object goes, but another process may write them from now on."""
        if self.lock_at is not None and not self._closed:
            self._closed = True
            writer_lock.release(self.lock_at)

    def _write_record(self) -> None:
        StoreRecord(self.model_id, self.dimension, self._indexed_rows).write(self.location)

    # --- tables ----------------------------------------------------------------------------

    def _consistency(self) -> timedelta | None:
        """A reader beside another process's writer checks for its commits on every read
        (a manifest read); the writer sees its own writes anyway."""
        return timedelta(0) if self.read_only else None

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

    def _open_items(self) -> Any:
        table = self._table(ITEMS, items_schema(self.dimension))
        stored = table.schema.field("vector").type
        if stored.list_size != self.dimension:
            raise ModelMismatch(
                f"the store's vectors are {stored.list_size}-d but the model makes "
                f"{self.dimension}-d ones; {REINDEX_HINT}"
            )
        if self.read_only:
            return table
        if json_metadata.migrate(table):
            table = self._db.open_table(ITEMS)
        threads.ensure_column(table)
        indexed = {tuple(index.columns) for index in table.list_indices()}
        for column, config in _SCALAR_INDEXES:
            if (column,) not in indexed:
                table.create_index(column, config=config)
        return table

    def add_items(self, pairs: Sequence[tuple[ContextItem, Vectors | None]]) -> list[ContextItem]:
        """Append items in one write (one table version), each given the next place in the
        store's order unless it has one (a bulk load may set them); returns them as stored.
        A failed write leaves a gap in the order, never a reused place."""
        stored: list[ContextItem] = []
        rows = []
        for item, vector in pairs:
            placed = item
            if item.sequence is None:
                placed = item.model_copy(update={"sequence": self._next_sequence})
            assert placed.sequence is not None
            self._next_sequence = max(self._next_sequence, placed.sequence) + 1
            stored.append(placed)
            rows.append(item_to_row(placed, vector))
        if rows:
            batch = pa.Table.from_pylist(rows, schema=self._items_schema)
            self.items.add(batch)
            self.usage.register(stored)
            self._vector_rows += sum(vector is not None for _, vector in pairs)
            if self._tally is not None:
                self._tally.add(batch)
            self._saw_iteration(max(item.created_iteration for item in stored))
            self.unindexed_rows += len(rows)
        return stored

    def get_items(self, ids: Sequence[str]) -> list[ContextItem]:
        """Items by id, in the order given; unknown ids are skipped."""
        if not ids:
            return []
        where = ItemFilter(ids=tuple(ids)).to_sql()
        rows = reads.rows_where(self.items, where, len(ids)).to_pylist()
        by_id = {row["id"]: self._item(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    def list_items(self, where: ItemFilter, limit: int) -> list[ContextItem]:
        """Items matching a filter, unordered, at most ``limit``."""
        rows = reads.rows_where(self.items, self._where(where), limit).to_pylist()
        return [self._item(r) for r in rows]

    def vector_search(
        self, query: Vectors, limit: int, where: ItemFilter
    ) -> list[tuple[ContextItem, float, Vectors]]:
        """Nearest items by cosine similarity, best first, with their vectors."""
        # No refine_factor: candidates are re-ranked below by exact cosine anyway. Rows
        # without a vector never reach the vector search, so no IS NOT NULL filter (it costs
        # ~2 ms a query); the null check below is only a guard.
        table = reads.vector_rows(
            self.items,
            query,
            limit,
            where=self._where(where),
            nprobes=self._nprobes if self.has_vector_index() else None,
        )
        vectors_column = table.column("vector")
        if table.num_rows == 0 or vectors_column.null_count:
            table = table.filter(pc.is_valid(vectors_column))
            if table.num_rows == 0:
                return []
        vectors = vector_matrix(table.column("vector"), self.dimension)
        similarity = vectors @ query.astype(np.float32)
        rows = table.drop_columns(["vector", "_distance"]).to_pylist()
        order = np.argsort(-similarity, kind="stable")
        return [(self._item(rows[i]), float(similarity[i]), vectors[i]) for i in order.tolist()]

    def neighbours(
        self, items: Sequence[ContextItem], where: ItemFilter
    ) -> list[tuple[ContextItem, Vectors | None]]:
        """The items stored right before and after each of ``items`` with the same source
        and iteration (and matching ``where``), not counting ``items`` themselves."""
        narrowed, places = threads.neighbour_filter(items, where)
        if not places:
            return []
        table = reads.rows_where(self.items, self._where(narrowed), places)
        vectors = vector_list(table.column("vector"), self.dimension)
        found = [
            (self._item(row), vector)
            for row, vector in zip(table.drop_columns(["vector"]).to_pylist(), vectors, strict=True)
        ]
        return [(i, v) for i, v in found if threads.same_thread(i, items)]

    def text_search(
        self, text: str, limit: int, where: ItemFilter
    ) -> list[tuple[ContextItem, float, Vectors | None]]:
        """Full-text (BM25) matches, best first, with their raw scores and vectors (``None``
        for items stored while no model was loaded)."""
        table = reads.text_rows(self.items, text, "content", limit, where=self._where(where))
        vectors = vector_list(table.column("vector"), self.dimension)
        rows = table.drop_columns(["vector"]).to_pylist()
        return [
            (self._item(row), float(row["_score"]), vector)
            for row, vector in zip(rows, vectors, strict=True)
        ]

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

    def record_access(self, ids: Iterable[str], when: datetime) -> None:
        """Count a retrieval of each id (in memory; written by :meth:`flush_usage`)."""
        self.usage.record_access(ids, when)

    def adjust_usefulness(self, item_id: str, delta: float) -> float:
        """Move an item's usefulness by ``delta`` (clamped to [0, 1]) and write it now:
        feedback is rare and precious, unlike access counts. Returns the new score.

        Raises:
            ItemNotFound: No item has that id.
        """
        if not self.get_items([item_id]):
            raise ItemNotFound(f"no context item with id {item_id!r}")
        score = min(1.0, max(0.0, self.usage.get(item_id).usefulness_score + delta))
        self.usage.set_usefulness(item_id, score)
        self.usage.flush()
        return score

    def set_usefulness(self, item_id: str, score: float) -> None:
        """Set an item's usefulness (in memory; written by :meth:`flush_usage`)."""
        self.usage.set_usefulness(item_id, score)

    def flush_usage(self) -> int:
        """Write pending usage changes to ``item_usage``; returns rows written."""
        return self.usage.flush()

    def delete_items(self, ids: Iterable[str]) -> int:
        """Delete by id; returns how many existed."""
        targets = tuple(ids)
        if not targets:
            return 0
        where = ItemFilter(ids=targets).to_sql()
        doomed = self.items.search().where(where).select(["content_type", "state"]).limit(None)
        doomed_rows = doomed.to_arrow()
        before = doomed_rows.num_rows
        # Counted on the doomed rows only: a recount of the table read every vector's
        # validity, a full scan per slice of a mass archive.
        with_vectors = self.items.count_rows(f"({where}) AND vector IS NOT NULL")
        self.items.delete(where)
        self.usage.forget(targets)
        self._vector_rows = max(0, self._vector_rows - int(with_vectors))
        if self._tally is not None:
            self._tally.remove(doomed_rows)
        return int(before)

    # --- lifecycle -------------------------------------------------------------------------

    def age_rows(self, before: int | None = None) -> list[AgeRow]:
        """Every hot item's id, type, state, iteration and usefulness; with ``before``, only
        items created before that iteration (a clock pass reads only what is old enough to
        change, not the whole store)."""
        columns = ["id", "content_type", "state", "created_iteration"]
        query = self.items.search().select(columns)
        if before is not None:
            query = query.where(f"created_iteration < {int(before)}")
        table = query.limit(None).to_arrow()
        return [
            AgeRow(
                id=row["id"],
                content_type=ContextType(row["content_type"]),
                state=ContextState(row["state"]),
                created_iteration=row["created_iteration"],
                usefulness=self.usage.get(row["id"]).usefulness_score,
            )
            for row in table.to_pylist()
        ]

    def set_state(self, ids: Sequence[str], state: ContextState) -> None:
        """Move items to ``state`` (one update per chunk of ids)."""
        for start in range(0, len(ids), _ID_CHUNK):
            where = ItemFilter(ids=tuple(ids[start : start + _ID_CHUNK])).to_sql()
            if self._tally is not None:
                old = self.items.search().where(where).select(["state"]).limit(None)
                self._tally.move(old.to_arrow().column("state").to_pylist(), state.value)
            self.items.update(where=where, values={"state": state.value})
        self.unindexed_rows += len(ids)

    def _rows_by_id(self, ids: Sequence[str]) -> Iterator[pa.Table]:
        """The hot rows of ``ids`` (all columns), one Arrow table per chunk of ids; unknown
        ids are skipped."""
        for start in range(0, len(ids), _ID_CHUNK):
            where = ItemFilter(ids=tuple(ids[start : start + _ID_CHUNK])).to_sql()
            yield reads.rows_where(self.items, where, None)

    def _with_vectors(self, ids: Sequence[str]) -> list[tuple[ContextItem, Vectors | None]]:
        found: list[tuple[ContextItem, Vectors | None]] = []
        for table in self._rows_by_id(ids):
            vectors = vector_list(table.column("vector"), self.dimension)
            rows = table.drop_columns(["vector"]).to_pylist()
            found.extend(
                (self._item(row), vector) for row, vector in zip(rows, vectors, strict=True)
            )
        return found

    def items_with_vectors(self, ids: Sequence[str]) -> list[tuple[ContextItem, Vectors | None]]:
        """Hot items of ``ids`` with their vectors (``None`` where they have none)."""
        return self._with_vectors(ids)

    def missing_vectors(self, limit: int) -> list[ContextItem]:
        """Items stored while no model was loaded (they have no vector), at most ``limit``."""
        table = self.items.search().where("vector IS NULL").limit(limit).to_arrow()
        return [self._item(row) for row in table.drop_columns(["vector"]).to_pylist()]

    def set_vectors(self, vectors: dict[str, Vectors]) -> int:
        """Give items their vectors (a backfill), in one write; returns how many changed."""
        current = self._with_vectors(list(vectors))
        pairs = [(item, vectors[item.id]) for item, _ in current]
        if not pairs:
            return 0
        rows = [item_to_row(item, vector) for item, vector in pairs]
        table = pa.Table.from_pylist(rows, schema=self._items_schema)
        self.items.merge_insert("id").when_matched_update_all().execute(table)
        self._vector_rows += sum(vector is None for _, vector in current)
        self.unindexed_rows += len(rows)
        return len(rows)

    def summarize_items(self, summaries: dict[str, str], when: datetime) -> int:
        """Replace items' text with their summaries, keeping each original in the archive.

        The original goes to the archive first, so a crash between the two writes leaves a
        duplicate original, never a lost one. The vector stays: it was made from the full
        text, which is what the item is about. Returns how many items were rewritten.
        """
        pairs = self._with_vectors(list(summaries))
        if not pairs:
            return 0
        self.archive.put(pairs, "original", when)
        rows = []
        for item, vector in pairs:
            summary = summaries[item.id]
            rewritten = item.model_copy(
                update={
                    "content": summary,
                    "summary": summary,
                    "state": ContextState.SUMMARIZED,
                    "original_length": item.original_length or len(item.content),
                }
            )
            rows.append(item_to_row(rewritten, vector))
        table = pa.Table.from_pylist(rows, schema=self._items_schema)
        self.items.merge_insert("id").when_matched_update_all().execute(table)
        if self._tally is not None:
            self._tally.move((item.state.value for item, _ in pairs), ContextState.SUMMARIZED)
        self.unindexed_rows += len(rows)
        return len(rows)

    def archive_items(self, ids: Sequence[str], when: datetime) -> int:
        """Move items from the hot table into the archive (archive written first), as Arrow
        rows: no Python object per item."""
        moved: list[str] = []
        for rows in self._rows_by_id(ids):
            if rows.num_rows == 0:
                continue
            found = [str(i) for i in rows.column("id").to_pylist()]
            usage = [self.usage.get(i) for i in found]
            state = rows.schema.get_field_index("state")
            rows = rows.set_column(
                state, "state", pa.array([ContextState.ARCHIVED.value] * len(found), pa.string())
            )
            self.archive.put_rows(
                rows, [(u.usefulness_score, u.access_count) for u in usage], "archived", when
            )
            moved.extend(found)
        return self.delete_items(moved)

    def archive_search(
        self, query: Vectors, limit: int, where: ItemFilter
    ) -> list[tuple[ContextItem, float, Vectors]]:
        """Archived items nearest to ``query`` (see :meth:`ArchiveStore.vector_search`)."""
        return self.archive.vector_search(query, limit, where)

    def find_archived(self, ids: Sequence[str]) -> list[ArchivedItem]:
        """Archive rows (archived items and originals) for these ids."""
        return self.archive.get(ids)

    def archived_rows(
        self, before: int | None = None, below: float | None = None
    ) -> list[ArchivedItem]:
        """Archived items (without their text), for pruning: with ``before`` only those
        created before that iteration, with ``below`` only those less useful than that."""
        return self.archive.rows("archived", before=before, below=below)

    def forgettable(self, selection: ForgetSelection) -> tuple[list[str], list[str]]:
        """The ids ``selection`` picks: hot items, and archived items not in the hot table."""
        where = selection.live_filter().to_sql()
        rows = self.items.search().where(where).select(["id"]).limit(None).to_arrow()
        hot = [str(i) for i in rows.column("id").to_pylist()]
        live = set(hot)
        archived = [
            entry.item.id
            for entry in self.archive.rows("archived")
            if entry.item.id not in live and selection.matches(entry.item)
        ]
        return hot, archived

    def prune(self, hot: Sequence[str], archived: Sequence[str]) -> int:
        """Delete items for good: from the hot table, and every archive row of either list
        (an item's original goes with it). Returns how many items were removed."""
        removed = 0
        for start in range(0, len(hot), _ID_CHUNK):
            removed += self.delete_items(hot[start : start + _ID_CHUNK])
        gone = set(hot)
        archive_only = [i for i in archived if i not in gone]
        before = {entry.item.id for entry in self.archive.get(archive_only, "archived")}
        self.archive.delete([*hot, *archive_only])
        return removed + len(before)

    # --- iterations ------------------------------------------------------------------------

    def add_keyed(
        self, item: ContextItem, vector: Vectors | None, key: str
    ) -> tuple[ContextItem, bool]:
        """Store ``item`` unless a write with idempotency ``key`` came first; returns the
        stored item and whether it was written now (see ``requests``)."""
        known = self.requests.get(key)
        if known is not None:
            first = self.get_items([known]) or [
                entry.item for entry in self.archive.get([known], "archived")
            ]
            if first:
                return first[0], False
            # The first call's writer died between the key and the item: finish it.
            item = item.model_copy(update={"id": known})
        else:
            self.requests.put(key, item.id)
        (stored,) = self.add_items([(item, vector)])
        return stored, True

    def add_iteration(self, result: IterationResult) -> None:
        """Record one iteration's result, replacing an earlier record of the same
        iteration (a retried or re-run report is not a second iteration)."""
        self._saw_iteration(result.iteration)
        (
            self.iterations.merge_insert("iteration")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(
                pa.Table.from_pylist([iteration_to_row(result)], schema=self.iterations.schema)
            )
        )

    def iteration(self, number: int) -> IterationResult | None:
        """The latest result reported for iteration ``number``, if any."""
        rows = self.iterations.search().where(f"iteration = {int(number)}").limit(None)
        found = rows.to_arrow().to_pylist()
        if not found:
            return None
        return iteration_from_row(max(found, key=lambda r: r["created_at"]))

    def recent_iterations(self, last_n: int) -> list[IterationResult]:
        """The ``last_n`` most recent iterations, newest first."""
        rows = self.iterations.to_arrow().to_pylist()
        rows.sort(key=lambda r: (r["iteration"], r["created_at"]), reverse=True)
        return [iteration_from_row(r) for r in rows[:last_n]]

    def latest_iteration(self) -> int:
        """The highest iteration number seen in either table (the lifecycle clock): kept
        by this process's writes, read from the tables when reading beside a writer."""
        if self.read_only or self._latest is None:
            self._latest = self._scan_latest()
        return self._latest

    def _saw_iteration(self, iteration: int) -> None:
        if self._latest is not None:
            self._latest = max(self._latest, iteration)

    def _scan_latest(self) -> int:
        latest = 0
        for table, column in ((self.iterations, "iteration"), (self.items, "created_iteration")):
            if table.count_rows():
                values = table.search().select([column]).limit(None).to_arrow().column(column)
                latest = max(latest, int(pc.max(values).as_py() or 0))
        return latest

    # --- housekeeping ----------------------------------------------------------------------

    def prewarm(self) -> None:
        """Load the vector and full-text indexes into LanceDB's cache at open, not on the
        first queries that touch each part: at 1M items the first 300 queries after an open
        took p99 190 ms loading index partitions, 43 ms once loaded (the load: 0.4 s,
        ~0.5 GB). Not after maintenance: every merge or refresh writes index files under a
        new id, and loading each whole kept the old ones' partitions in the cache too (the
        1M benchmark process grew to 9.5 GB). A damaged index is left to the query path,
        which steps down and repairs it."""
        names = (VECTOR_INDEX, _TEXT_INDEX) if self.has_vector_index() else (_TEXT_INDEX,)
        for name in names:
            try:
                self.items.prewarm_index(name)
            except Exception as exc:  # a missing or damaged index: the queries will say
                log.warning("index_not_prewarmed", index=name, error=f"{type(exc).__name__}")

    def has_vector_index(self) -> bool:
        """True once an IVF index covers the vector column.

        Looked up once per open (0.6 ms a call), then tracked: this store builds the index
        itself, and only a rewrite (reindex) drops it, which reopens the store.
        """
        if not self._vector_index and not self._index_looked_up:
            self._index_looked_up = True
            self._vector_index = any(
                index.columns == ["vector"] for index in self.items.list_indices()
            )
            if self._vector_index:
                self._nprobes = probes(self.items.count_rows())
        return self._vector_index

    def _build_vector_index(self, rows: int) -> None:
        self.items.create_index(
            "vector",
            config=IvfSq(distance_type="cosine", num_partitions=partitions(rows)),
            replace=True,
        )
        self._vector_index, self._nprobes, self._indexed_rows = True, probes(rows), rows
        if self.model_id is not None:
            self._write_record()

    def rebuild_vector_index(self) -> bool:
        """Retrain the vector index from the stored vectors (after its files were damaged).

        Returns False when the table is too small for an index: vector search then scans
        the rows directly, which does not touch the damaged files.
        """
        rows = int(self.items.count_rows("vector IS NOT NULL"))
        self._vector_rows = rows
        if rows < self.vector_index_min_rows:
            if self.has_vector_index():
                self.items.drop_index(VECTOR_INDEX)
            self._vector_index = False
            return False
        self._build_vector_index(rows)
        return True

    def index_due(self) -> bool:
        """True when the vector index should be built, or retrained because the table has
        doubled since it was trained (cheap: uses a running count)."""
        if self._vector_rows < self.vector_index_min_rows:
            return False
        return not self.has_vector_index() or self._vector_rows >= 2 * max(self._indexed_rows, 1)

    def maintain(self, *, reclaim: bool = False) -> MaintenanceReport:
        """Compact files, fold new rows into the indexes, drop old versions, and build the
        vector index once the table is large enough (retrained when it has doubled since).

        ``reclaim`` drops every old version at once (not only those past the retention
        window): pruning for space needs the deleted rows' files gone now.
        """
        built = False
        # The running count (kept by every write): recounting read every vector's validity,
        # ~130 ms at 100k items on each maintenance.
        vectors = self._vector_rows
        folded = self.unindexed_rows
        if self.index_due():
            self._build_vector_index(vectors)
            built = True
            self._delta_rows, folded = 0, 0
        self.flush_usage()
        now = time.monotonic()
        retention = timedelta(0) if reclaim else self.version_retention
        # Old versions go once per retention window (listing a table's files cost 0.17 s at
        # 57k items, on every maintenance), or at once when asked to reclaim space.
        cleanup = reclaim or now - self._cleaned_at >= retention.total_seconds()
        # The full-text index is rewritten whole to take in new rows (0.14-0.19 s at 57k):
        # it waits until enough rows are outside it, which a query scans meanwhile.
        self._text_pending += folded
        text_due = built or self._text_pending >= min(_TEXT_BATCH, self._vector_rows // 16 + 1)
        before = len(self.items.list_versions()) if cleanup else 0
        with warnings.catch_warnings():
            # Lance warns that readers of old versions would fail: this process is the only
            # writer, and reclaiming is only asked for when the store is over its size limit.
            warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
            for table in (self.items, self.iterations, self.usage.table):
                tidy(
                    table,
                    skip_indexes=() if text_due or table is not self.items else (_TEXT_INDEX,),
                    cleanup_older_than=retention if cleanup else None,
                    delete_unverified=reclaim,
                )
            self.archive.optimize(
                retention if cleanup else None,
                delete_unverified=reclaim,
                index_from=self.vector_index_min_rows,
            )
        if text_due:
            self._text_pending = 0
        if cleanup:
            self._cleaned_at = now
        if self._vector_index and not built:
            self._delta_rows = merge_deltas(self.items, self._delta_rows + folded)
        reads.warm(
            self.items,
            self.dimension,
            vector=self._vector_index,
            text_column="content" if text_due else None,
        )
        self.unindexed_rows = 0
        removed = max(0, before - len(self.items.list_versions())) if cleanup else 0
        if self._vector_index:
            self._nprobes = probes(vectors)
        log.info("store_maintained", vector_index_built=built, versions_removed=removed)
        return MaintenanceReport(compacted=True, vector_index_built=built, versions_removed=removed)

    def size_bytes(self) -> int:
        """Bytes on disk (every version), or the in-memory table size."""
        if self.location is None:
            return sum(_total_bytes(table) for table in (self.items, self.iterations))
        return namespaces.disk_bytes(self.location)

    def stats(self) -> StoreStats:
        """Counts by type and state, size, version and index facts."""
        if self._tally is not None:
            by_type, by_state = self._tally.snapshot()
            items = self._tally.total
        else:
            columns = self.items.search().select(["content_type", "state"]).limit(None)
            scanned = columns.to_arrow()
            by_type = counts(scanned.column("content_type").to_pylist())
            by_state = counts(scanned.column("state").to_pylist())
            items = scanned.num_rows
        return StoreStats(
            items=items,
            by_type=by_type,
            by_state=by_state,
            without_vector=self.without_vector,
            archived=self.archive.count(),
            iterations=int(self.iterations.count_rows()),
            latest_iteration=self.latest_iteration(),
            size_bytes=self.size_bytes(),
            table_version=int(self.items.version),
            vector_index=self.has_vector_index(),
            model_id=self.model_id,
            dimension=self.dimension,
        )

    @property
    def without_vector(self) -> int:
        """Items stored without a vector (no model answered in time; a backfill gives them
        one): from the running counts, no I/O (a scan of the vector column's validity took
        124 ms at 100k items), or read from the table when reading beside a writer."""
        if self._tally is None:
            return int(self.items.count_rows("vector IS NULL"))
        return max(0, self._tally.total - self._vector_rows)

    def all_ids(self) -> list[str]:
        """Every item id (for re-embedding and audits)."""
        ids = self.items.search().select(["id"]).limit(None).to_arrow().column("id")
        return [str(v) for v in ids.to_pylist()]


def _total_bytes(table: Any) -> int:
    stats: Any = table.stats()  # a dict at run time, typed as a class
    return int(stats["total_bytes"])
