"""The LanceDB store's item reads and writes: add (keyed or not), get, list, search
(vector, full-text, neighbours in the store's order), usage counters and deletes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ralph_context.embeddings.local import Vectors
from ralph_context.errors import IdempotencyConflict, ItemForgotten, ItemNotFound
from ralph_context.models import ContextItem
from ralph_context.storage.integrity.salvage import Salvage
from ralph_context.storage.lifecycle.tombstones import ID, KEY
from ralph_context.storage.store.core import StoreCore
from ralph_context.storage.table import reads, threads
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.schema import item_to_row
from ralph_context.storage.table.vectors import vector_list, vector_matrix

# One keyed write: the item, its vector, the idempotency key and the fingerprint of the
# request's arguments (``requests``); and its answer: the stored item and whether this
# write stored it, or the refusal of a key another request claimed.
Keyed = tuple[ContextItem, Vectors | None, str, str | None]
KeyedAnswer = tuple[ContextItem, bool] | IdempotencyConflict | ItemForgotten


def forgotten_key(key: str) -> ItemForgotten:
    """The refusal of a write under ``key`` whose item was forgotten."""
    return ItemForgotten(
        f"idempotency_key {key!r:.80} {ItemForgotten.MARK} with its item: a retry does not "
        "bring it back (use a new key to store it anew)"
    )


class StoreItems(StoreCore):
    """Items in and out of the hot table (see the module's docstring)."""

    def add_items(self, pairs: Sequence[tuple[ContextItem, Vectors | None]]) -> list[ContextItem]:
        """Append items in one write (one table version), each given the next place in the
        store's order unless it has one (a bulk load may set them); returns them as stored.
        A failed write leaves a gap in the order, never a reused place.

        Raises:
            ItemForgotten: An item has the id of one a forget deleted (``tombstones``);
                nothing is written.
        """
        self._refuse_forgotten([item.id for item, _ in pairs])
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

    def _refuse_forgotten(self, ids: Sequence[str]) -> None:
        """Raises ``ItemForgotten`` when one of ``ids`` was forgotten."""
        for item_id in ids:
            if self.tombstones.forgotten(ID, item_id):
                raise ItemForgotten(
                    f"item {item_id!r} {ItemForgotten.MARK} and is not stored again "
                    "(import --include-forgotten brings forgotten items back)"
                )

    def saw_forwarded(self, stored: Sequence[ContextItem], vectors: int, version: int) -> None:
        """Items the replica committing the store's writes stored for this one
        (``forwarding``): the items table checked out at ``version`` or later, so that this
        process's next read sees them, and its running counts as a write here keeps them."""
        if self.items.version < version:
            self.items.checkout_latest()
        if not stored:
            return
        self.usage.register(stored)
        self._vector_rows += vectors
        self._saw_iteration(max(item.created_iteration for item in stored))
        placed = [item.sequence for item in stored if item.sequence is not None]
        self._next_sequence = max([self._next_sequence, *(p + 1 for p in placed)])

    def get_items(self, ids: Sequence[str]) -> list[ContextItem]:
        """Items by id, in the order given; unknown ids are skipped."""
        if not ids:
            return []
        where = ItemFilter(ids=tuple(ids)).to_sql()
        rows = reads.rows_where(self.items, where, len(ids), cache=self.row_cache).to_pylist()
        by_id = {row["id"]: self._item(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    def list_items(self, where: ItemFilter, limit: int) -> list[ContextItem]:
        """Items matching a filter, unordered, at most ``limit``."""
        rows = reads.rows_where(self.items, self._where(where), limit).to_pylist()
        return [self._item(r) for r in rows]

    def page_items(
        self, where: ItemFilter, offset: int, limit: int, archived: bool = False
    ) -> tuple[list[ContextItem], int]:
        """One page of the items ``where`` selects, newest first, and how many it selects
        (``archived``: of the archive, most recently archived first).

        Only the selection's ids and times are read and sorted, then the page's rows: at
        10k items a page is two small queries, not a read of every row."""
        if archived:
            return self.archive.page(where, offset, limit)
        columns = ["id", "created_at", "sequence"]
        table = reads.rows_where(self.items, self._where(where), None, columns=columns)
        keys = [("created_at", "descending"), ("sequence", "descending")]
        order = pc.sort_indices(table, sort_keys=keys)[offset : offset + limit]
        ids = [str(i) for i in table.column("id").take(order).to_pylist()]
        return self.get_items(ids), table.num_rows

    def iteration_counts(self, first: int, last: int) -> dict[int, int]:
        """Items of the hot table created in each iteration from ``first`` to ``last``."""
        where = ItemFilter(min_iteration=first, max_iteration=last).to_sql()
        table = reads.rows_where(self.items, where, None, columns=["created_iteration"])
        created = table.column("created_iteration").to_numpy()
        numbers, counts = np.unique(created, return_counts=True)
        return {int(n): int(c) for n, c in zip(numbers.tolist(), counts.tolist(), strict=True)}

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
            cache=self.row_cache,
            via=self.searcher,
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
        table = reads.rows_where(
            self.items, self._where(narrowed), places, cache=self.row_cache, via=self.searcher
        )
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
        table = reads.text_rows(
            self.items,
            text,
            "content",
            limit,
            where=self._where(where),
            cache=self.row_cache,
            via=self.searcher,
        )
        vectors = vector_list(table.column("vector"), self.dimension)
        rows = table.drop_columns(["vector"]).to_pylist()
        return [
            (self._item(row), float(row["_score"]), vector)
            for row, vector in zip(rows, vectors, strict=True)
        ]

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

    def add_keyed(
        self, item: ContextItem, vector: Vectors | None, key: str, fingerprint: str | None = None
    ) -> tuple[ContextItem, bool]:
        """Store ``item`` unless a write with idempotency ``key`` came first; returns the
        stored item and whether it was written now (see ``requests``).

        Raises:
            IdempotencyConflict: ``key`` was claimed by a request with other arguments
                (another ``fingerprint``).
            ItemForgotten: The key's item was forgotten since it was stored.
        """
        answer = self.add_keyed_many([(item, vector, key, fingerprint)])[0]
        if isinstance(answer, IdempotencyConflict | ItemForgotten):
            raise answer
        return answer

    def add_keyed_many(self, entries: Sequence[Keyed]) -> list[KeyedAnswer]:
        """:meth:`add_keyed` for several writes at once (a group commit): the new keys are
        claimed together (one write of the keys table; on a shared store one claim object
        each), then the items whose claim this writer won go in one append. Fewer table
        versions, and on object storage fewer commits for replicas to collide on. A key
        repeated in ``entries`` stands for its first entry (answered as not written). A
        write whose key stands for a different request, or whose key's item was forgotten
        (``tombstones``: the forget dropped the key, so it would look new), is answered
        with its refusal, a value: the others in the group are not refused with it."""
        firsts: dict[str, int] = {}
        fresh: list[int] = []
        refusals: dict[int, ItemForgotten] = {}
        for n, (_, _, key, _) in enumerate(entries):
            if key not in firsts:
                firsts[key] = n
                if self.tombstones.has_digest(KEY, self.requests.digest(key)):
                    refusals[n] = forgotten_key(key)
                elif self.requests.find(key) is None:
                    fresh.append(n)
        claimed = self.requests.claim_many(
            [(entries[n][2], entries[n][0].id, entries[n][3]) for n in fresh]
        )
        won = [n for n, c in zip(fresh, claimed, strict=True) if c.target == entries[n][0].id]
        appended = self.add_items([(entries[n][0], entries[n][1]) for n in won])
        answers = {n: (stored, True) for n, stored in zip(won, appended, strict=True)}
        results: list[KeyedAnswer] = []
        for n, (item, vector, key, fingerprint) in enumerate(entries):
            first = firsts[key]
            if first in refusals:
                results.append(refusals[first])
                continue
            claim = self.requests.get(key)
            assert claim is not None  # claimed: by an earlier write or just now
            try:
                claim.target_for(key, fingerprint)
            except IdempotencyConflict as refused:
                results.append(refused)
                continue
            if first not in answers:
                try:
                    answers[first] = self._first_keyed(item, vector, claim.target)
                except ItemForgotten as forgotten:  # another replica's key, forgotten here
                    refusals[first] = forgotten
                    results.append(forgotten)
                    continue
            results.append(answers[first] if first == n else (answers[first][0], False))
        return results

    def put_request_key(self, key: str, target: str, fingerprint: str | None) -> None:
        """``RequestLog.put``, unless ``key``'s item was forgotten.

        Raises:
            ItemForgotten: A forget dropped ``key`` with its item: its retry is refused.
            IdempotencyConflict: As ``RequestLog.put``.
        """
        if self.tombstones.has_digest(KEY, self.requests.digest(key)):
            raise forgotten_key(key)
        self.requests.put(key, target, fingerprint)

    def _first_keyed(
        self, item: ContextItem, vector: Vectors | None, known: str
    ) -> tuple[ContextItem, bool]:
        """The item ``known`` of a key claimed before (here or by another replica)."""
        if self.shared:
            # Another replica may have stored it a moment ago: look at the latest.
            self.items.checkout_latest()
        first = self.get_items([known]) or [
            entry.item for entry in self.archive.get([known], "archived")
        ]
        if first:
            return first[0], False
        # The first call's writer died between the key and the item: finish it.
        # (Unless a forget deleted it since: then add_items refuses it, ItemForgotten.)
        (stored,) = self.add_items([(item.model_copy(update={"id": known}), vector)])
        return stored, True

    def salvage(self, iterations: bool = False) -> Salvage:
        """The hot table (or the iterations') pinned at its version, to be read a fragment
        at a time (``salvage``: an export gets every fragment that can be read)."""
        return Salvage(self.iterations if iterations else self.items)

    def salvaged_items(
        self, salvage: Salvage, fragment: int, offset: int, limit: int
    ) -> list[tuple[ContextItem, Vectors | None]]:
        """Up to ``limit`` items of one fragment of :meth:`salvage`, with their vectors."""
        table = salvage.rows(fragment, offset, limit)
        vectors = vector_list(table.column("vector"), self.dimension)
        rows = table.drop_columns(["vector"]).to_pylist()
        return [(self._item(row), vector) for row, vector in zip(rows, vectors, strict=True)]

    def all_ids(self) -> list[str]:
        """Every item id (for re-embedding and audits)."""
        ids = self.items.search().select(["id"]).limit(None).to_arrow().column("id")
        return [str(v) for v in ids.to_pylist()]
