"""The LanceDB store's iterations table: one row per iteration's reported result."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ralph_context.models import IterationResult
from ralph_context.storage.integrity.salvage import Salvage
from ralph_context.storage.store.core import StoreCore
from ralph_context.storage.table.schema import (
    iteration_from_row,
    iteration_to_row,
)

__all__ = ["FORGOTTEN", "StoreIterations"]

# What a cleared record's summary (and error, if it had one) says instead of the text.
FORGOTTEN = "[forgotten]"


class StoreIterations(StoreCore):
    """Iteration results in and out of the ``iterations`` table."""

    def add_iteration(self, result: IterationResult) -> None:
        """Record one iteration's result, replacing an earlier record of the same
        iteration (a retried or re-run report is not a second iteration).

        A number past every one seen is new: appended (~8 ms at 100k, against 13-33 ms for
        the upsert, which also rereads the table and retries when a compaction of it
        commits first: seen at 256 ms). Only by this store's one writer: on a shared store
        another replica may have recorded it a moment ago.
        """
        row = pa.Table.from_pylist([iteration_to_row(result)], schema=self.iterations.schema)
        if not self.shared and result.iteration > self.latest_iteration():
            self.iterations.add(row)
            self._saw_iteration(result.iteration)
            return
        self._saw_iteration(result.iteration)
        (
            self.iterations.merge_insert("iteration")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(row)
        )

    def iteration(self, number: int) -> IterationResult | None:
        """The latest result reported for iteration ``number``, if any."""
        rows = self.iterations.search().where(f"iteration = {int(number)}").limit(None)
        found = rows.to_arrow().to_pylist()
        if not found:
            return None
        return iteration_from_row(max(found, key=lambda r: r["created_at"]))

    def salvaged_iterations(
        self, salvage: Salvage, fragment: int, offset: int, limit: int
    ) -> list[IterationResult]:
        """Up to ``limit`` iteration records of one fragment of ``salvage(iterations=True)``."""
        return [iteration_from_row(r) for r in salvage.rows(fragment, offset, limit).to_pylist()]

    def recent_iterations(self, last_n: int) -> list[IterationResult]:
        """The ``last_n`` most recent iterations, newest first."""
        rows = self.iterations.to_arrow().to_pylist()
        rows.sort(key=lambda r: (r["iteration"], r["created_at"]), reverse=True)
        return [iteration_from_row(r) for r in rows[:last_n]]

    def iterations_among(self, numbers: Sequence[int] = (), before: int | None = None) -> list[int]:
        """The recorded iterations among ``numbers`` (all when empty) and before ``before``
        (no bound when ``None``), ascending."""
        clauses = []
        if numbers:
            clauses.append(f"iteration IN ({', '.join(str(int(n)) for n in numbers)})")
        if before is not None:
            clauses.append(f"iteration < {int(before)}")
        query = self.iterations.search().select(["iteration"]).limit(None)
        if clauses:
            query = query.where(" AND ".join(clauses))
        return sorted({int(n) for n in query.to_arrow().column("iteration").to_pylist()})

    def forget_iterations(self, deleted: Sequence[int], cleared: Sequence[int]) -> None:
        """Delete the records of iterations ``deleted``; keep those of ``cleared`` (their
        numbers, outcome, duration, tokens and cost) with their text gone: the summary (and
        the error, if any) become ``FORGOTTEN``, tool calls and artifacts empty. A cleared
        record keeps the loop's numbering and the lifecycle clock whole. The old text stays
        in the table's files until a scrub (``StoreUpkeep.scrub``)."""
        if deleted:
            numbers = ", ".join(str(int(n)) for n in deleted)
            self.iterations.delete(f"iteration IN ({numbers})")
        rows = []
        for number in cleared:
            found = self.iteration(number)
            if found is None:
                continue
            rows.append(
                iteration_to_row(
                    found.model_copy(
                        update={
                            "summary": FORGOTTEN,
                            "error": None if found.error is None else FORGOTTEN,
                            "tool_calls": (),
                            "artifacts": (),
                        }
                    )
                )
            )
        if rows:
            (
                self.iterations.merge_insert("iteration")
                .when_matched_update_all()
                .execute(pa.Table.from_pylist(rows, schema=self.iterations.schema))
            )
