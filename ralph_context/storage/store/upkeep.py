"""The LanceDB store's upkeep: when to compact, fold new rows into the indexes, build or
retrain the vector index and drop old versions (``upkeep`` runs the table parts), and what
the store holds and costs (``stats``, ``size_bytes``).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance

from ralph_context import namespaces
from ralph_context._logging import get_logger
from ralph_context.storage.integrity import checks as integrity
from ralph_context.storage.integrity.checksums import Ledger
from ralph_context.storage.maintenance import upkeep_worker
from ralph_context.storage.maintenance.index_merge import INDEX as VECTOR_INDEX
from ralph_context.storage.maintenance.index_merge import merge_deltas
from ralph_context.storage.maintenance.upkeep import build_vector_index, in_memory, tidy
from ralph_context.storage.store.core import TEXT_BEARING, TEXT_INDEX, StoreCore
from ralph_context.storage.table import reads
from ralph_context.storage.table.tally import counts
from ralph_context.storage.table.vectors import partitions, probes

log = get_logger("ralph_context.storage")
ANOTHER_REPLICA = "another replica holds the maintenance lease of this store"
# The full-text index takes in new rows once this many (or a sixteenth of a small table)
# are outside it: a query scans them meanwhile (210 rows: +2.5-4 ms a full-text query at
# 40k items), and each refresh rewrites the whole index (0.14-0.19 s at 57k).
_TEXT_BATCH = 64
# Bytes of new data files one seal hashes at most (a store written before checksums were
# kept is sealed a slice at a time, not in one long pause of the writer).
_SEAL_BYTES = 64 << 20


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
class MaintenanceReport:
    """What one maintenance pass did."""

    compacted: bool
    vector_index_built: bool
    versions_removed: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)
    scrubbed: bool = False


class StoreUpkeep(StoreCore):
    """Maintenance of the store's tables and indexes, and its stats."""

    def _build_vector_index(self, rows: int) -> None:
        build_vector_index(self.items, partitions(rows), self.storage_options)
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

    def prepare_upkeep(self) -> None:
        """Start the low-priority upkeep process maintenance will use, unless this store
        never uses it (in memory, or read-only); see ``UpkeepWorker.start``."""
        if not self.read_only and not in_memory(self.items):
            upkeep_worker.worker().start()

    def scrub(self) -> MaintenanceReport:
        """Make what was deleted or rewritten unreadable on disk: after a forget (rows
        deleted) or a redaction (rows rewritten by ``update``, which deletes the old row and
        writes a new one). A deleted row is only hidden: Lance keeps it in its data file
        until that file is rewritten, which maintenance does at half the file deleted, and
        every older version keeps its files. So, in every table of the store (hot items,
        iterations, usage, request keys, each archive month): every file holding a deleted
        row is rewritten without it, whatever its share; the indexes take in the moves, and
        the ones that hold the text (full-text on ``content``, labels on ``tags``) are built
        again from the rows; then every old version goes, as with ``reclaim``. This
        process's row cache is emptied too.

        Verified by grepping the store's files for a forgotten marker (tests/storage): none
        left on disk, in data, deletion or index files.

        Readers: as ``reclaim``, the versions dropped may be the one a read in flight is on
        (that read fails; the next sees the new version). On object storage the versions
        another replica may still read (replaced less than a minute ago, see
        ``kept_for_readers``) are kept, so the old files there go at a later maintenance,
        once past the retention window; other replicas' row caches keep their rows until
        they restart. The maintenance lease is not waited for: a forget cannot wait for
        another replica, and Lance's commit protocol refuses or retries a compaction that
        conflicts with the holder's.

        The tool packs' tables are left alone: a forget does not touch them.

        Costs a full compaction plus the two text indexes built again (measured in the
        CHANGELOG).
        """
        report = self.maintain(reclaim=True, scrub=True)
        if self.row_cache is not None:
            self.row_cache.clear()
        return report

    def seal(self, budget: int = _SEAL_BYTES) -> int:
        """Checksum the data files every table's latest version references that have none
        yet, at most ``budget`` bytes of them (``checksums``); returns how many. Only a
        local store this process writes seals; a disk that refuses the ledger's line leaves
        the files unsealed until the next call."""
        if not isinstance(self.location, Path) or not self.locked:
            return 0
        if self._ledger is None:
            self._ledger = Ledger(self.location)
        try:
            files = [
                path
                for table in integrity.tables(self.location)
                for path, _ in integrity.data_files(lance.dataset(str(table)))
            ]
            sealed = self._ledger.seal(files, budget)
            if len(self._ledger.entries) > 2 * len(files) + 64:  # maintenance dropped files
                self._ledger.keep_only(files)
        except OSError as exc:
            log.warning("files_not_sealed", error=str(exc))
            return 0
        return sealed

    def maintain(
        self, *, reclaim: bool = False, scrub: bool = False, settle: bool = False
    ) -> MaintenanceReport:
        """Compact files, fold new rows into the indexes, drop old versions, and build the
        vector index once the table is large enough (retrained when it has doubled since).

        ``reclaim`` drops every old version at once (not only those past the retention
        window): pruning for space needs the deleted rows' files gone now (on object
        storage, those no replica may still read). ``scrub``: see :meth:`scrub`. ``settle``:
        the versions past the retention window go now, whenever the last cleanup was (the
        pass a quiet store gets once its writes are that old: see ``actors.settle``).

        On object storage only the replica holding the maintenance lease does any of it
        (see ``lease``), but a scrub; the others answer that nothing was done, and why.
        """
        # A scrub takes the lease when it can (so that no other replica starts maintaining
        # meanwhile) but runs without it too (see scrub).
        if not self.may_maintain() and not scrub:
            return MaintenanceReport(
                compacted=False, vector_index_built=False, notes=(ANOTHER_REPLICA,)
            )
        if self.shared:
            # What other replicas stored counts too: the index is due by the table's rows.
            # (All rows: the count is the manifest's, where a filtered one reads a column.)
            self._vector_rows = int(self.items.count_rows())
        built = False
        # The running count (kept by every write): recounting read every vector's validity,
        # ~130 ms at 100k items on each maintenance.
        vectors = self._vector_rows
        # Appends may land while this runs (actors.storage.beside): their rows stay counted.
        taken = folded = self.unindexed_rows
        if self.index_due():
            self._build_vector_index(vectors)
            built = True
            self._delta_rows, folded = 0, 0
        self.usage.flush()
        now = time.monotonic()
        retention = timedelta(0) if reclaim else self.version_retention
        # Old versions go once per retention window (listing a table's files cost 0.17 s at
        # 57k items, on every maintenance), or at once when asked to reclaim space.
        cleanup = reclaim or settle or now - self._cleaned_at >= retention.total_seconds()
        # The full-text index is rewritten whole to take in new rows (0.14-0.19 s at 57k):
        # it waits until enough rows are outside it, which a query scans meanwhile.
        self._text_pending += folded
        text_due = (
            scrub or built or self._text_pending >= min(_TEXT_BATCH, self._vector_rows // 16 + 1)
        )
        before = len(self.items.list_versions()) if cleanup else 0
        with warnings.catch_warnings():
            # Lance warns that readers of old versions would fail: this process is the only
            # writer, and reclaiming is only asked for when the store is over its size limit.
            warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
            # The request keys too: one fragment per keyed write until compacted.
            keys = () if self.requests.table is None else (self.requests.table,)
            for table in (self.items, self.iterations, self.usage.table, *keys):
                tidy(
                    table,
                    options=self.storage_options,
                    skip_indexes=() if text_due or table is not self.items else (TEXT_INDEX,),
                    cleanup_older_than=retention if cleanup else None,
                    delete_unverified=reclaim,
                    shared=self.shared,
                    scrub=scrub,
                    rebuild=TEXT_BEARING if scrub and table is self.items else (),
                )
            self.archive.optimize(
                retention if cleanup else None,
                delete_unverified=reclaim,
                index_from=self.vector_index_min_rows,
                scrub=scrub,
            )
        if text_due:
            self._text_pending = 0
        if cleanup:
            self._cleaned_at = now
        if self._vector_index and not built:
            self._delta_rows = merge_deltas(
                self.items, self._delta_rows + folded, self.storage_options
            )
        reads.warm(
            self.items,
            self.dimension,
            vector=self._vector_index,
            text_column="content" if text_due else None,
            via=self.searcher,
        )
        self.unindexed_rows = max(0, self.unindexed_rows - taken)
        removed = max(0, before - len(self.items.list_versions())) if cleanup else 0
        if self._vector_index:
            self._nprobes = probes(vectors)
        log.info(
            "store_maintained", vector_index_built=built, versions_removed=removed, scrub=scrub
        )
        return MaintenanceReport(
            compacted=True, vector_index_built=built, versions_removed=removed, scrubbed=scrub
        )

    def may_maintain(self) -> bool:
        """True unless the store is shared and another replica holds the maintenance lease
        (taken or renewed here: every maintenance step asks first)."""
        return self.lease is None or self.lease.take()

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
    def searched_rows(self) -> int:
        """About how many items a full-text search scores against (BM25's document count):
        the running counts, no I/O; beside a writer, the rows with a vector as counted at
        open or at the last maintenance (a scale for BM25, so a stale count is harmless)."""
        return max(self._tally.total if self._tally is not None else self._vector_rows, 1)

    @property
    def without_vector(self) -> int:
        """Items stored without a vector (no model answered in time; a backfill gives them
        one): from the running counts, no I/O (a scan of the vector column's validity took
        124 ms at 100k items), or read from the table when reading beside a writer."""
        if self._tally is None:
            return int(self.items.count_rows("vector IS NULL"))
        return max(0, self._tally.total - self._vector_rows)


def _total_bytes(table: Any) -> int:
    stats: Any = table.stats()  # a dict at run time, typed as a class
    return int(stats["total_bytes"])
