"""Replicas share the usage table: a ledger takes in another writer's counters on refresh,
and reads the table only when another writer committed since its last read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import lancedb
import pytest

from ralph_context.storage.table.usage import USAGE, Usage, UsageLedger, usage_schema

WHEN = datetime(2026, 11, 26, tzinfo=UTC)


class CountingLedger(UsageLedger):
    """A ledger that counts its reads of the whole table."""

    reads = 0

    def _read(self) -> dict[str, Usage]:
        self.reads += 1
        return super()._read()


def two_ledgers(folder: Path) -> tuple[CountingLedger, CountingLedger]:
    """Two processes' views of one usage table (each its own connection, always fresh)."""
    lancedb.connect(folder).create_table(USAGE, schema=usage_schema())
    tables = [
        lancedb.connect(folder, read_consistency_interval=timedelta(0)).open_table(USAGE)
        for _ in range(2)
    ]
    return CountingLedger(tables[0]), CountingLedger(tables[1])


def test_a_ledger_alone_reads_nothing_back_after_its_own_flushes(tmp_path: Path) -> None:
    mine, _other = two_ledgers(tmp_path)
    reads = mine.reads
    for n in range(3):
        mine.record_access([f"item-{n}"], WHEN)
        mine.set_usefulness("item-0", 0.9)
        if n == 2:
            mine.forget(["item-2"])
        mine.flush()
        mine.refresh()
    assert mine.reads == reads
    assert mine.get("item-0").usefulness_score == 0.9
    assert mine.get("item-1").access_count == 1
    assert mine.get("item-2").access_count == 0  # forgotten: back to the defaults


def test_another_writers_counters_arrive_on_the_next_refresh(tmp_path: Path) -> None:
    mine, other = two_ledgers(tmp_path)
    mine.record_access(["shared"], WHEN)
    mine.flush()
    other.refresh()
    other.set_usefulness("shared", 0.2)
    other.record_access(["theirs"], WHEN)
    other.flush()

    mine.refresh()
    assert mine.get("shared").usefulness_score == pytest.approx(0.2)
    assert mine.get("theirs").access_count == 1
    reads = mine.reads
    mine.refresh()  # nothing new since
    assert mine.reads == reads


def test_a_flush_on_top_of_another_writers_commit_still_reads_it(tmp_path: Path) -> None:
    mine, other = two_ledgers(tmp_path)
    other.set_usefulness("theirs", 0.8)
    other.flush()  # committed before mine, which has not read it yet
    mine.record_access(["ours"], WHEN)
    mine.flush()

    mine.refresh()
    assert mine.get("theirs").usefulness_score == pytest.approx(0.8)
    assert mine.get("ours").access_count == 1
