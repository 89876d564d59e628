"""Cold storage: items moved out of the hot table, and originals of summarized items.

Layout: ``<store>/archives/`` is its own LanceDB database with one table per month the items
were archived in (``items_2026_11``), so a month can be inspected, copied or deleted as a
unit, and the hot table's indexes and scans never pay for cold rows. Rows keep the full text,
the vector and the usefulness the item had when archived; lookups are by id.

Two reasons put a row here: ``archived`` (the item left the hot table) and ``original`` (the
hot table now holds a summary; this row keeps the text it replaced).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.index import Bitmap

from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem
from ralph_context.object_location import Location
from ralph_context.storage.maintenance.index_merge import merge_deltas
from ralph_context.storage.maintenance.upkeep import build_vector_index, tidy
from ralph_context.storage.table import json_metadata, reads
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.schema import item_from_row, item_to_row, items_schema, writable
from ralph_context.storage.table.vectors import partitions, probes, vector_matrix

__all__ = ["ARCHIVES", "ArchiveStore", "ArchivedItem"]

ARCHIVES = "archives"
_MONTH = re.compile(r"^items_\d{4}_\d{2}$")
Reason = Literal["archived", "original"]


@dataclass(frozen=True)
class ArchivedItem:
    """An archived row: the item as it was, why and when it was archived, and its month."""

    item: ContextItem
    reason: Reason
    archived_at: datetime
    table: str


def _schema(dimension: int) -> pa.Schema:
    base = items_schema(dimension)
    return (
        base.append(pa.field("usefulness_score", pa.float64(), nullable=False))
        .append(pa.field("access_count", pa.int64(), nullable=False))
        .append(pa.field("reason", pa.string(), nullable=False))
        .append(pa.field("archived_at", pa.timestamp("us", tz="UTC"), nullable=False))
    )


class ArchiveStore:
    """The archive database next to the hot store (in memory when the store is)."""

    def __init__(
        self,
        location: Location | None,
        dimension: int,
        *,
        options: dict[str, str],
        consistency: timedelta | None = None,
        shared: bool = False,
        session: lancedb.Session | None = None,
    ) -> None:
        self.location = None if location is None else location / ARCHIVES
        uri = str(self.location) if self.location else f"memory://ralph-archive-{id(self)}"
        self.dimension = dimension
        self.options = options
        # Written by other replicas too (object storage): month tables are listed again
        # once per ``consistency`` interval, and counts are not kept.
        self.shared = shared
        self._listed_at = time.monotonic()
        self._relist_after = consistency.total_seconds() if consistency else 0.0
        self._db = lancedb.connect(
            uri, storage_options=options, read_consistency_interval=consistency, session=session
        )
        # Until something is archived, a search of the archive is skipped without a call.
        self._open: dict[str, Any] = {}
        # Month tables and their row counts, kept by this process's writes (the store's only
        # writer): listing tables and counting rows cost a hand-off each, on every search.
        self._names = sorted(n for n in self._db.list_tables().tables if _MONTH.match(n))
        self._rows: dict[str, int] = {}
        # Per month table: rows at its last optimize, and rows in its vector index's deltas.
        self._optimized_rows: dict[str, int] = {}
        self._delta_rows: dict[str, int] = {}
        # A shared archive is never known to be empty: another replica may fill it.
        self.empty = not self._names and not shared

    def _table(self, name: str) -> Any:
        """An open month table, opened once (opening costs a manifest read per call) and
        used for every read and write: a second handle would not see this one's writes."""
        table = self._open.get(name)
        if table is None:
            table = self._open[name] = self._db.open_table(name)
        return table

    def migrate_metadata(self) -> None:
        """Move every month table's metadata to Lance JSON (see ``json_metadata``), so a
        metadata filter can search the archive as it searches the hot table."""
        for name in self._names:
            if json_metadata.migrate(self._table(name)):
                self._open[name] = self._db.open_table(name)

    def tables(self) -> list[str]:
        """Month tables, oldest first."""
        if self.shared and time.monotonic() - self._listed_at > self._relist_after:
            listed = {n for n in self._db.list_tables().tables if _MONTH.match(n)}
            self._names = sorted(listed | set(self._names))
            self._listed_at = time.monotonic()
        return list(self._names)

    def _count(self, name: str) -> int:
        """Rows in a month table (counted once, then kept by :meth:`put` and
        :meth:`delete`; counted each time when other replicas write it too)."""
        if self.shared:
            return int(self._table(name).count_rows())
        count = self._rows.get(name)
        if count is None:
            count = self._rows[name] = int(self._table(name).count_rows())
        return count

    def put(
        self,
        entries: Sequence[tuple[ContextItem, Vectors | None]],
        reason: Reason,
        when: datetime,
    ) -> None:
        """Append items (with their current usage) to this month's table, in one write."""
        if not entries:
            return
        rows = []
        for item, vector in entries:
            row = item_to_row(item, vector)
            row.update(
                usefulness_score=item.usefulness_score,
                access_count=item.access_count,
                reason=reason,
                archived_at=when,
            )
            rows.append(row)
        table = self._month(when)
        # The table's own schema: a month table from before a column was added lacks it.
        table.add(pa.Table.from_pylist(rows, schema=writable(table.schema)))
        self._added(table, len(rows))

    def put_rows(
        self,
        rows: pa.Table,
        usage: Sequence[tuple[float, int]],
        reason: Reason,
        when: datetime,
    ) -> None:
        """Append hot-table rows as they are (Arrow, vectors included), with each row's
        usefulness and access count, in one write. A mass archive moves a whole store 128
        rows at a time: through Python objects each row cost ~0.2 ms (its vector became a
        list of 384 floats and back)."""
        if rows.num_rows == 0:
            return
        table = self._month(when)
        count = rows.num_rows
        extra = {
            "usefulness_score": pa.array([u for u, _ in usage], pa.float64()),
            "access_count": pa.array([a for _, a in usage], pa.int64()),
            "reason": pa.array([reason] * count, pa.string()),
            "archived_at": pa.array([when] * count, pa.timestamp("us", tz="UTC")),
        }
        for name, values in extra.items():
            rows = rows.append_column(name, values)
        # The table's own schema (a month table from before a column was added lacks it).
        schema = writable(table.schema)
        table.add(rows.select(schema.names).cast(schema))
        self._added(table, count)

    def _month(self, when: datetime) -> Any:
        """This month's table (created on first use)."""
        name = f"items_{when.year:04d}_{when.month:02d}"
        table = self._open.get(name)
        if table is None:
            schema = _schema(self.dimension)
            table = self._open[name] = self._db.create_table(name, schema=schema, exist_ok=True)
        if name not in self._names:
            self._names = sorted([*self._names, name])
        self.empty = False
        return table

    def _added(self, table: Any, rows: int) -> None:
        if table.name in self._rows:
            self._rows[table.name] += rows

    def get(self, ids: Sequence[str], reason: Reason | None = None) -> list[ArchivedItem]:
        """Archived rows for these ids (newest month first when an id appears twice)."""
        if not ids:
            return []
        where = _ids(ids)
        found: list[ArchivedItem] = []
        for name in reversed(self.tables()):
            table = self._table(name)
            rows = reads.rows_where(table, where, None)
            found.extend(_archived(row, name) for row in rows.drop_columns(["vector"]).to_pylist())
        if reason is not None:
            found = [entry for entry in found if entry.reason == reason]
        return found

    def page(self, where: ItemFilter, offset: int, limit: int) -> tuple[list[ContextItem], int]:
        """One page of the archived items (not originals) ``where`` selects, most recently
        archived first, and how many it selects: the ids and times of the selection are
        sorted, then only the page's rows are read whole."""
        clause = where.to_sql()
        condition = "reason = 'archived'" + (f" AND ({clause})" if clause else "")
        columns = ["id", "archived_at"]
        found = [
            reads.rows_where(self._table(name), condition, None, columns=columns)
            for name in self.tables()
        ]
        if not found:
            return [], 0
        table = pa.concat_tables(found)
        order = pc.sort_indices(table, sort_keys=[("archived_at", "descending")])
        ids = [str(i) for i in table.column("id").take(order[offset : offset + limit]).to_pylist()]
        items = {entry.item.id: entry.item for entry in self.get(ids, "archived")}
        return [items[i] for i in ids if i in items], table.num_rows

    def vector_search(
        self, query: Vectors, limit: int, where: ItemFilter
    ) -> list[tuple[ContextItem, float, Vectors]]:
        """Archived items (not originals) nearest to ``query`` by cosine, best first.

        Searched only when the hot table matches a query weakly; a month table past
        ``index_from`` rows has a vector index (see :meth:`optimize`), smaller ones are
        scanned exactly.
        """
        found: list[tuple[ContextItem, float, Vectors]] = []
        clause = where.to_sql()
        condition = "reason = 'archived'" + (f" AND ({clause})" if clause else "")
        probe = query.astype(np.float32)
        for name in self.tables():
            table = self._table(name)
            rows = reads.vector_rows(
                table, probe, limit, where=condition, nprobes=probes(self._count(name))
            )
            if rows.num_rows == 0:
                continue
            vectors = vector_matrix(rows.column("vector"), self.dimension)
            similarity = vectors @ probe
            for row, score, vector in zip(
                rows.drop_columns(["vector", "_distance"]).to_pylist(),
                similarity.tolist(),
                vectors,
                strict=True,
            ):
                found.append((_archived(row, name).item, float(score), vector))
        found.sort(key=lambda hit: -hit[1])
        return found[:limit]

    def rows(
        self, reason: Reason, *, before: int | None = None, below: float | None = None
    ) -> list[ArchivedItem]:
        """Rows archived for ``reason``, without their text; with ``before``, only items
        created before that iteration, with ``below``, only those less useful than that.
        A lifecycle pass asks for the prunable ones alone: a whole archive of 100k items
        read on every pass cost seconds of CPU beside the loop's searches."""
        condition = f"reason = '{reason}'"
        if before is not None:
            condition += f" AND created_iteration < {int(before)}"
        if below is not None:
            condition += f" AND usefulness_score < {float(below)!r}"
        found: list[ArchivedItem] = []
        for name in self.tables():
            table = self._table(name)
            columns = [c for c in table.schema.names if c not in ("vector", "content")]
            query = table.search().where(condition).select(columns).limit(None)
            found.extend(_archived({**row, "content": ""}, name) for row in query.to_list())
        return found

    def delete(self, ids: Iterable[str]) -> int:
        """Delete every archived row (both reasons) of these ids; returns rows deleted."""
        targets = tuple(ids)
        if not targets:
            return 0
        where = _ids(targets)
        deleted = 0
        for name in self.tables():
            table = self._table(name)
            count = int(table.count_rows(where))
            if count:
                table.delete(where)
                deleted += count
                self._rows.pop(name, None)
        return deleted

    def count(self) -> int:
        """Rows archived as items (not originals)."""
        total = 0
        for name in self.tables():
            total += int(self._table(name).count_rows("reason = 'archived'"))
        return total

    def optimize(
        self,
        retention: timedelta | None,
        *,
        delete_unverified: bool = False,
        index_from: int = 5_000,
        scrub: bool = False,
    ) -> None:
        """Compact every month table (and with ``retention``, drop versions older than
        that), and give one with ``index_from`` vectors or more a vector index: a loop
        archives most of what it stores, and an archive of 100k items scanned exactly on
        every weak query cost more than the hot search itself. ``scrub``: every table is
        compacted so that no file keeps a deleted row (see ``upkeep.tidy``); the archive's
        indexes hold vectors and the reason, no text, so folding them in suffices."""
        for name in self.tables():
            table = self._table(name)
            rows = self._count(name)
            columns = [index.columns for index in table.list_indices()]
            indexed = ["vector"] in columns
            added = rows - self._optimized_rows.get(name, rows)
            tidied = (
                scrub or bool(added) or retention is not None or name not in self._optimized_rows
            )
            if tidied:
                tidy(
                    table,
                    options=self.options,
                    cleanup_older_than=retention,
                    delete_unverified=delete_unverified,
                    shared=self.shared,
                    scrub=scrub,
                )
            if indexed:
                # Each optimize adds a delta to the index (see index_merge).
                deltas = self._delta_rows.get(name, 0) + max(0, added)
                self._delta_rows[name] = merge_deltas(table, deltas, self.options)
            elif rows >= index_from:
                build_vector_index(table, partitions(rows), self.options)
                self._delta_rows[name] = 0
                indexed = True
            if indexed and ["reason"] not in columns:
                # Every archive search filters on reason: without an index the filter read
                # the whole column first (a loop's archive at 67k rows: 6.2 -> 4.6 ms a
                # search with it, 7.3 -> 5.3 ms of CPU).
                table.create_index("reason", config=Bitmap())
            if indexed and tidied:
                reads.warm(table, self.dimension, vector=True, text_column=None)
            self._optimized_rows[name] = rows


def _ids(ids: Sequence[str]) -> str:
    where = ItemFilter(ids=tuple(ids)).to_sql()
    assert where is not None, "callers pass at least one id"
    return where


def _archived(row: dict[str, Any], table: str) -> ArchivedItem:
    item = item_from_row(row).model_copy(
        update={
            "usefulness_score": float(row["usefulness_score"]),
            "access_count": int(row["access_count"]),
        }
    )
    return ArchivedItem(item, row["reason"], row["archived_at"], table)
