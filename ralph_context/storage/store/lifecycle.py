"""What the lifecycle does to stored items: their ages, state moves, summaries (the
originals kept in the archive), archiving, archive reads, forgetting and pruning, and vector
backfills for items stored without one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import pyarrow as pa

from ralph_context.embeddings.local import Vectors
from ralph_context.models import ITERATION_ERROR_TAG, ContextItem, ContextState, ContextType
from ralph_context.storage.lifecycle.archive import ArchivedItem
from ralph_context.storage.store.items import StoreItems
from ralph_context.storage.store.iterations import StoreIterations
from ralph_context.storage.table import reads
from ralph_context.storage.table.filters import DueFilter, ForgetSelection, ItemFilter
from ralph_context.storage.table.schema import item_to_row
from ralph_context.storage.table.usage import Usage
from ralph_context.storage.table.vectors import vector_list


@dataclass(frozen=True)
class AgeRow:
    """What the lifecycle needs to know about a hot item, without its text or vector."""

    id: str
    content_type: ContextType
    state: ContextState
    created_iteration: int
    usefulness: float


@dataclass(frozen=True)
class Forgettable:
    """What a forget selection picks: hot items, archived items not in the hot table, the
    iteration records to delete, and those to clear (the error their iteration reported
    is among the items going, and the record would show it)."""

    hot: list[str]
    archived: list[str]
    records: list[int]
    cleared: list[int]

    @property
    def empty(self) -> bool:
        return not (self.hot or self.archived or self.records or self.cleared)


# Ids per IN (...) clause: keeps statements small when thousands of items change state.
_ID_CHUNK = 500


class StoreLifecycle(StoreItems, StoreIterations):
    """Moves of hot items through their states and into the archive (see the module's
    docstring)."""

    def age_rows(self, before: int | None = None) -> list[AgeRow]:
        """Every hot item's id, type, state, iteration and usefulness; with ``before``, only
        items created before that iteration (a clock pass reads only what is old enough to
        change, not the whole store)."""
        return self._age_rows_where(
            None if before is None else ItemFilter(max_iteration=before - 1).to_sql()
        )

    def due_rows(self, due: DueFilter, prune_before: int, prune_below: float) -> list[AgeRow]:
        """The hot items a clock pass can act on: those past their state's age (``due``),
        and those old enough to prune (created before ``prune_before``) whose usefulness is
        below ``prune_below``. Every other row would be read only to be left alone: at 100k
        items reading them all took 100-380 ms of the writer's CPU on every iteration, beside
        the loop's own search."""
        if Usage().usefulness_score < prune_below:
            due = replace(due, all_before=prune_before)
        found = {row.id: row for row in self._age_rows_where(due.to_sql())}
        low = sorted(self.usage.below(prune_below))
        for start in range(0, len(low), _ID_CHUNK):
            chunk = ItemFilter(
                ids=tuple(low[start : start + _ID_CHUNK]), max_iteration=prune_before - 1
            )
            found.update((row.id, row) for row in self._age_rows_where(chunk.to_sql()))
        return list(found.values())

    def _age_rows_where(self, where: str | None) -> list[AgeRow]:
        columns = ["id", "content_type", "state", "created_iteration"]
        table = reads.rows_where(self.items, where, None, columns=columns)
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

    def forgettable(self, selection: ForgetSelection) -> Forgettable:
        """What ``selection`` picks (see :class:`Forgettable`)."""
        where = selection.live_filter().to_sql()
        columns = ["id", "content_type", "tags", "created_iteration"]
        rows = self.items.search().where(where).select(columns).limit(None).to_arrow()
        hot = [str(i) for i in rows.column("id").to_pylist()]
        errors = {
            int(row["created_iteration"])
            for row in rows.to_pylist()
            if row["content_type"] == ContextType.ERROR.value
            and ITERATION_ERROR_TAG in (row["tags"] or ())
        }
        live = set(hot)
        archived = []
        for entry in self.archive.rows("archived"):
            item = entry.item
            if item.id not in live and selection.matches(item):
                archived.append(item.id)
                if item.content_type is ContextType.ERROR and ITERATION_ERROR_TAG in item.tags:
                    errors.add(item.created_iteration)
        records = (
            self.iterations_among(selection.iterations, selection.older_than)
            if selection.takes_records
            else []
        )
        cleared = [n for n in self.iterations_among(sorted(errors)) if n not in records]
        return Forgettable(hot, archived, records, cleared if errors else [])

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
