"""Rows of a replica's reads come from its row cache by address (``row_cache``); a commit
that moves the table between a query's ids and the take of its rows must not lose rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import lancedb
import numpy as np
import pyarrow as pa
import pytest
from lancedb.index import FTS

from ralph_context.storage.replicas.row_cache import RowCache
from ralph_context.storage.table import reads

TEXTS = [f"note {n}: the deploy waits for the schema migration" for n in range(6)]


def one_row_per_fragment(folder: Path) -> Any:
    """A table of six rows, each appended alone (six fragments, as single writes leave
    them), with a full-text index; the handle LanceDB gives a writer."""
    db = lancedb.connect(folder)
    schema = pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("content", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), 4)),
        ]
    )
    table = db.create_table("items", schema=schema)
    for n, text in enumerate(TEXTS):
        vector = np.zeros(4, dtype=np.float32)
        vector[n % 4] = 1.0
        table.add(pa.table({"id": [f"i{n}"], "content": [text], "vector": [vector]}, schema))
    table.create_index("content", config=FTS())
    return table


@pytest.fixture
def compacted_before_the_take(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Between a query's ids and the take of its rows, another writer compacts the table
    and the handle moves to that version (as a replica's does once its refresh interval has
    passed, or after its own maintenance). Counts the takes that followed a compaction."""
    take = reads._take
    moved: list[int] = []

    def compact_then_take(table: Any, ids: list[int]) -> pa.Table:
        lance.dataset(table.uri).optimize.compact_files()
        table.checkout_latest()
        moved.append(len(ids))
        return take(table, ids)

    monkeypatch.setattr(reads, "_take", compact_then_take)
    return moved


def test_rows_by_id_survive_a_compaction_between_ids_and_take(
    tmp_path: Path, compacted_before_the_take: list[int]
) -> None:
    table = one_row_per_fragment(tmp_path)
    where = "id IN ('i0', 'i1', 'i2', 'i3', 'i4', 'i5')"
    rows = reads.rows_where(table, where, 6, cache=RowCache())
    assert compacted_before_the_take == [6]
    assert sorted(rows.column("id").to_pylist()) == [f"i{n}" for n in range(6)]
    assert rows.column("content").to_pylist() == [
        TEXTS[int(i[1:])] for i in rows.column("id").to_pylist()
    ]


def test_nearest_and_text_rows_survive_a_compaction_between_ids_and_take(
    tmp_path: Path, compacted_before_the_take: list[int]
) -> None:
    table = one_row_per_fragment(tmp_path)
    query = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    nearest = reads.vector_rows(table, query, 2, cache=RowCache())
    assert sorted(nearest.column("id").to_pylist()) == ["i0", "i4"]
    assert nearest.column("_distance").to_pylist() == pytest.approx([0.0, 0.0], abs=1e-6)
    # The compaction is already done: the second query's take finds its rows at once.
    found = reads.text_rows(table, "note 3 deploy", "content", 6, cache=RowCache())
    assert len(found) == 6
    assert found.column("id").to_pylist()[0] == "i3"
    assert found.column("_score").to_pylist() == sorted(
        found.column("_score").to_pylist(), reverse=True
    )
    assert compacted_before_the_take == [2, 6]


def test_rows_already_cached_are_not_taken_again(tmp_path: Path) -> None:
    table = one_row_per_fragment(tmp_path)
    cache = RowCache()
    where = "id IN ('i0', 'i1')"
    first = reads.rows_where(table, where, 2, cache=cache)
    again = reads.rows_where(table, where, 2, cache=cache)
    assert first.equals(again)
    assert (cache.hits, cache.misses) == (2, 2)
