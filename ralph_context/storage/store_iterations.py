"""The LanceDB store's iterations table: one row per iteration's reported result."""

from __future__ import annotations

import pyarrow as pa

from ralph_context.models import IterationResult
from ralph_context.storage.schema import (
    iteration_from_row,
    iteration_to_row,
)
from ralph_context.storage.store_core import StoreCore


class StoreIterations(StoreCore):
    """Iteration results in and out of the ``iterations`` table."""

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
