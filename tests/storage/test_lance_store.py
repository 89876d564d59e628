"""The LanceDB store on its own: model record, vector/text search, writes, maintenance."""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ralph_context.embeddings.local import Vectors
from ralph_context.errors import ModelMismatch
from ralph_context.models import ContextItem, ContextState, ContextType, IterationResult
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.maintenance import upkeep_worker
from ralph_context.storage.table import reads
from ralph_context.storage.table.filters import ItemFilter
from tests.helpers import unit


def item(content: str, kind: ContextType = ContextType.OUTPUT, **extra: object) -> ContextItem:
    return ContextItem(content=content, content_type=kind, **extra)  # type: ignore[arg-type]


def test_store_records_its_model_and_refuses_another(tmp_path: Path) -> None:
    LanceStore(tmp_path, model_id="model-a", dimension=4)
    record = json.loads((tmp_path / "store.json").read_text())
    assert record["model_id"] == "model-a"
    assert record["dimension"] == 4
    with pytest.raises(ModelMismatch, match="ralph-context reindex") as raised:
        LanceStore(tmp_path, model_id="model-b", dimension=4)
    assert "'model-a'" in str(raised.value)
    assert "'model-b'" in str(raised.value)
    with pytest.raises(ModelMismatch, match="reindex"):
        LanceStore(tmp_path, model_id="model-a", dimension=8)


def test_store_opens_without_a_model_using_the_recorded_one(tmp_path: Path) -> None:
    LanceStore(tmp_path, model_id="model-a", dimension=4)
    reopened = LanceStore(tmp_path, model_id=None, dimension=None)
    assert (reopened.model_id, reopened.dimension) == ("model-a", 4)


def test_vector_search_returns_cosine_similarity_best_first(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    near, far, orthogonal = item("near"), item("far"), item("orthogonal", ContextType.ERROR)
    no_vector = item("no vector")
    store.add_items(
        [
            (near, unit(1, 0.1, 0, 0)),
            (far, unit(1, 1, 1, 0)),
            (orthogonal, unit(0, 0, 0, 1)),
            (no_vector, None),
        ]
    )
    hits = store.vector_search(unit(1, 0, 0, 0), 10, ItemFilter())
    assert [hit.id for hit, _, _ in hits] == [near.id, far.id, orthogonal.id]
    assert hits[0][1] == pytest.approx(float(unit(1, 0.1, 0, 0)[0]), abs=1e-5)
    assert hits[2][1] == pytest.approx(0.0, abs=1e-6)
    only_errors = store.vector_search(unit(1, 0, 0, 0), 10, ItemFilter(types=(ContextType.ERROR,)))
    assert [hit.id for hit, _, _ in only_errors] == [orthogonal.id]


def test_text_search_finds_items_without_vectors(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    target = item("Timeout while fetching the wheel from the package index")
    store.add_items([(target, None), (item("unrelated words entirely"), unit(1, 0, 0, 0))])
    hits = store.text_search("wheel timeout", 5, ItemFilter())
    assert [hit.id for hit, _, _ in hits] == [target.id]
    assert hits[0][2] is None  # stored without a vector


def test_iterations_are_kept_and_drive_the_clock(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    for n in (1, 3, 2):
        store.add_iteration(IterationResult(iteration=n, success=n != 2, summary=f"it {n}"))
    store.add_items([(item("late", created_iteration=7), None)])
    recent = store.recent_iterations(2)
    assert [r.iteration for r in recent] == [3, 2]
    assert recent[1].success is False
    assert store.latest_iteration() == 7


def test_maintenance_compacts_and_builds_the_vector_index_past_the_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is trained in the upkeep child (where it gives way to searches)."""
    ops: list[str] = []
    run = upkeep_worker.UpkeepWorker.run

    def recorded(self: upkeep_worker.UpkeepWorker, request: dict[str, Any]) -> None:
        ops.append(request["op"])
        run(self, request)

    monkeypatch.setattr(upkeep_worker.UpkeepWorker, "run", recorded)
    store = LanceStore(tmp_path, model_id="m", dimension=4, vector_index_min_rows=256)
    rng = np.random.default_rng(7)
    indexed_needle = item("indexed needle")
    store.add_items([(indexed_needle, unit(-0.5, 0.5, 0.5, 0.5))])
    for batch in range(3):
        vectors = rng.normal(size=(100, 4)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.add_items([(item(f"b{batch} row {i}"), vectors[i]) for i in range(100)])
    assert not store.has_vector_index()
    assert store.index_due()
    report = store.maintain()
    assert not store.index_due()
    # Rows inside the IVF index still report exact cosine (LanceDB's own _distance would not).
    near = store.vector_search(unit(-0.5, 0.5, 0.5, 0.5), 3, ItemFilter())
    assert near[0][0].id == indexed_needle.id
    assert near[0][1] == pytest.approx(1.0, abs=1e-5)
    probe = unit(0.2, 0.9, -0.3, 0.1)
    for _hit, similarity, vector in store.vector_search(probe, 5, ItemFilter()):
        assert similarity == pytest.approx(float(vector @ probe), abs=1e-5)
    assert report.vector_index_built
    assert store.has_vector_index()
    assert "vector_index" in ops
    target = item("needle")
    store.add_items([(target, unit(0.3, -0.2, 0.9, 0.1))])
    hits = store.vector_search(unit(0.3, -0.2, 0.9, 0.1), 5, ItemFilter())
    assert hits[0][0].id == target.id
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert store.stats().items == 302


def test_usage_counters_never_rewrite_the_items_table_and_persist(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    a, b = item("a"), item("b")
    store.add_items([(a, unit(1, 0, 0, 0)), (b, None)])
    items_version = store.items.version
    when = a.created_at
    for _ in range(3):
        store.record_access([a.id], when)
    store.record_access([b.id], when)
    store.set_usefulness(b.id, 0.9)
    got = {i.id: i for i in store.get_items([a.id, b.id])}
    assert (got[a.id].access_count, got[b.id].access_count) == (3, 1)
    assert got[a.id].last_accessed == when
    assert got[b.id].usefulness_score == 0.9
    assert store.vector_search(unit(1, 0, 0, 0), 1, ItemFilter())[0][0].access_count == 3
    assert store.flush_usage() == 2
    assert store.items.version == items_version, "indexed rows must not be rewritten"
    reopened = LanceStore(tmp_path, model_id="m", dimension=4)
    again = {i.id: i for i in reopened.get_items([a.id, b.id])}
    assert again == got
    reopened.delete_items([b.id])
    reopened.flush_usage()
    assert LanceStore(tmp_path, model_id="m", dimension=4).usage.get(b.id).access_count == 0


def test_items_stored_with_non_default_usefulness_keep_it(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    skill = item("always pin versions", ContextType.SKILL, usefulness_score=0.8)
    store.add_items([(skill, None)])
    store.flush_usage()
    reopened = LanceStore(tmp_path, model_id="m", dimension=4)
    assert reopened.get_items([skill.id])[0].usefulness_score == 0.8


def test_a_refused_open_leaves_the_model_record_untouched(tmp_path: Path) -> None:
    LanceStore(tmp_path, model_id="model-a", dimension=4)
    (tmp_path / "store.json").unlink()  # record lost; the table still holds 4-d vectors
    with pytest.raises(ModelMismatch, match="4-d"):
        LanceStore(tmp_path, model_id="model-b", dimension=8)
    assert not (tmp_path / "store.json").exists()


def _random_items(
    rng: np.random.Generator, count: int, tag: str
) -> list[tuple[ContextItem, Vectors]]:
    vectors = rng.normal(size=(count, 4)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [(item(f"{tag} row {i}"), vectors[i]) for i in range(count)]


def test_maintenance_keeps_the_vector_index_in_few_pieces(tmp_path: Path) -> None:
    """LanceDB adds an index delta per maintenance; a loop's store had 59 after 250
    iterations. Merged here, a search scans at most two pieces whatever the history."""
    store = LanceStore(tmp_path, model_id="m", dimension=4, vector_index_min_rows=256)
    rng = np.random.default_rng(11)
    store.add_items(_random_items(rng, 400, "base"))
    store.maintain()
    assert store.has_vector_index()
    needles = []
    for round_ in range(8):
        needle = item(f"needle {round_}")
        direction = unit(*rng.normal(size=4))
        store.add_items([(needle, direction), *_random_items(rng, 5, f"r{round_}")])
        store.maintain()
        needles.append((needle, direction))
        assert store.items.index_stats("vector_idx").num_indices <= 2
    assert store.items.index_stats("vector_idx").num_indexed_rows == store.stats().items
    for needle, direction in needles:
        found = store.vector_search(direction, 3, ItemFilter())
        assert found[0][0].id == needle.id


def test_rows_waiting_for_the_full_text_index_are_found_and_folded_in_later(
    tmp_path: Path,
) -> None:
    """The full-text index is rewritten whole to take in rows, so maintenance defers it
    for a few rows; a query still finds them (LanceDB scans rows outside the index)."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    rng = np.random.default_rng(5)
    store.add_items(_random_items(rng, 50, "base"))
    store.maintain()
    late = item("zanzibar kettle overheated during the build")
    store.add_items([(late, unit(1, 0, 0, 0))])
    store.maintain()
    assert store.items.index_stats("content_idx").num_unindexed_rows == 1
    hits = store.text_search("zanzibar kettle", 5, ItemFilter())
    assert [hit.id for hit, _, _ in hits] == [late.id]
    store.add_items(_random_items(rng, 100, "bulk"))
    store.maintain()
    assert store.items.index_stats("content_idx").num_unindexed_rows == 0
    assert [hit.id for hit, _, _ in store.text_search("zanzibar kettle", 5, ItemFilter())] == [
        late.id
    ]


def test_reads_use_the_async_table_behind_the_writers_handle(tmp_path: Path) -> None:
    """One-hop reads go through the very table the writer appends to, so a read right
    after a write sees it (a second handle would not)."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    assert reads.async_table(store.items) is store.items._table
    with pytest.raises(TypeError, match="no async table"):
        reads.async_table(object())
    written = item("written just now")
    store.add_items([(written, unit(0, 1, 0, 0))])
    assert [i.id for i in store.get_items([written.id])] == [written.id]


def test_a_warm_up_query_never_fails_the_maintenance_it_follows(tmp_path: Path) -> None:
    """The warm-up after a maintenance is a convenience: on a table without the index it
    would open (here: no full-text index on ``id``), it logs and returns."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    store.add_items([(item("a note"), unit(1, 0, 0, 0))])
    reads.warm(store.items, 4, vector=True, text_column="id")
    store.maintain()
    assert [i.content for i in store.list_items(ItemFilter(), 5)] == ["a note"]


def test_upkeep_runs_in_a_lowest_priority_process_that_can_be_lost(tmp_path: Path) -> None:
    """Compaction and index work run niced in a child, so searches get the cores first;
    a child that dies costs nothing but its priority (the next operation starts another)."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    store.add_items(_random_items(np.random.default_rng(3), 40, "a"))
    store.maintain()
    child = upkeep_worker.worker()._process
    assert child is not None and child.poll() is None
    if hasattr(os, "getpriority"):
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == upkeep_worker.NICENESS
    child.kill()
    child.wait()
    late = item("written after the upkeep process died")
    store.add_items([(late, unit(0, 0, 1, 0))])
    store.maintain()
    assert store.items.index_stats("id_idx").num_unindexed_rows == 0
    assert [i.id for i in store.get_items([late.id])] == [late.id]
    with pytest.raises(RuntimeError, match="unknown upkeep operation"):
        upkeep_worker.worker().run({"op": "nonsense", "uri": str(store.items.uri)})


def test_archiving_moves_rows_whole_with_their_usage(tmp_path: Path) -> None:
    """Archived rows travel as Arrow rows; every field, the vector and the usage arrive."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    kept = item(
        "pool exhausted at 12:00",
        ContextType.ERROR,
        tags=("db", "pool"),
        metadata={"file": "db.py", "line": 3},
        created_iteration=4,
        source="ralph",
    )
    other = item("stays hot")
    store.add_items([(kept, unit(0, 1, 0, 0)), (other, unit(1, 0, 0, 0))])
    store.set_usefulness(kept.id, 0.9)
    store.record_access([kept.id, kept.id], datetime.now(UTC))
    when = datetime(2026, 11, 24, tzinfo=UTC)
    assert store.archive_items([kept.id, "no-such-id"], when) == 1
    assert [i.id for i in store.get_items([kept.id, other.id])] == [other.id]
    (entry,) = store.find_archived([kept.id])
    assert entry.reason == "archived"
    assert entry.table == "items_2026_11"
    archived = entry.item
    assert archived.state is ContextState.ARCHIVED
    assert (archived.content, archived.tags, archived.metadata) == (
        kept.content,
        kept.tags,
        kept.metadata,
    )
    assert (archived.created_iteration, archived.source, archived.sequence) == (4, "ralph", 0)
    assert archived.usefulness_score == pytest.approx(0.9)
    assert archived.access_count == 2
    (hit,) = store.archive_search(unit(0, 1, 0, 0), 5, ItemFilter())
    assert hit[0].id == kept.id
    assert hit[1] == pytest.approx(1.0, abs=1e-5)


def test_an_indexed_archive_indexes_the_reason_every_search_filters_on(tmp_path: Path) -> None:
    """Archive searches filter on ``reason``; once a month table has a vector index it gets
    a bitmap index on that column too, and rows archived after it are still found."""
    store = LanceStore(tmp_path, model_id="m", dimension=4, vector_index_min_rows=256)
    pairs = _random_items(np.random.default_rng(5), 400, "cold")
    store.add_items(pairs)
    when = datetime(2026, 11, 24, tzinfo=UTC)
    store.archive_items([entry.id for entry, _ in pairs[:300]], when)
    store.maintain()
    table = store.archive._table("items_2026_11")
    indexes = {tuple(index.columns): index.index_type for index in table.list_indices()}
    assert indexes[("reason",)] == "Bitmap"
    assert ("vector",) in indexes
    store.archive_items([entry.id for entry, _ in pairs[300:]], when)
    for entry, vector in (pairs[7], pairs[350]):
        (hit, *_rest) = store.archive_search(vector, 3, ItemFilter())
        assert hit[0].id == entry.id
        assert hit[1] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")
def test_a_hung_upkeep_process_is_killed_at_its_deadline(tmp_path: Path) -> None:
    """The writer waits for each upkeep operation; a child that stops answering is killed
    at the deadline (the operation fails) and the next operation gets a new child."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    store.add_items(_random_items(np.random.default_rng(9), 10, "a"))
    # A niced child on a busy machine may need seconds for a healthy compaction: only the
    # stopped one gets the short deadline.
    upkeep = upkeep_worker.UpkeepWorker(deadline=120.0)
    try:
        upkeep.run({"op": "compact", "uri": str(store.items.uri)})
        child = upkeep._process
        assert child is not None
        os.kill(child.pid, signal.SIGSTOP)
        upkeep.deadline = 1.0
        with pytest.raises(TimeoutError, match="compact took over 1s"):
            upkeep.run({"op": "compact", "uri": str(store.items.uri)})
        assert child.poll() is not None  # killed, not left stopped
        upkeep.deadline = 120.0
        upkeep.run({"op": "compact", "uri": str(store.items.uri)})
        assert upkeep._process is not None and upkeep._process.pid != child.pid
    finally:
        upkeep.close()


def test_the_writers_running_counts_match_a_scan_after_every_kind_of_write(
    tmp_path: Path,
) -> None:
    """stats() answers from counts the writer keeps; after adds, state changes, summaries,
    archiving and deletes they must equal what a reader beside it counts from the rows."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    kinds = [ContextType.OUTPUT, ContextType.ERROR, ContextType.SKILL]
    stored = store.add_items(
        [(item(f"note {n}", kinds[n % 3]), unit(1, n, 0, 0)) for n in range(30)]
    )
    stored += store.add_items([(item("no vector yet", ContextType.TASK), None)])
    ids = [i.id for i in stored]
    store.set_state(ids[:10], ContextState.AGING)
    store.set_state(ids[5:15], ContextState.AGING)  # some twice
    store.summarize_items({ids[0]: "short", ids[20]: "short too"}, datetime.now(UTC))
    store.archive_items(ids[1:4], datetime.now(UTC))
    store.prune(ids[25:27], ids[1:2])
    store.delete_items([ids[28], "no-such-id"])
    counted = store.stats()
    reader = LanceStore(tmp_path, model_id="m", dimension=4, read_only=True)
    scanned = reader.stats()
    assert (counted.items, counted.by_type, counted.by_state) == (
        scanned.items,
        scanned.by_type,
        scanned.by_state,
    )
    assert counted.items == 31 - 3 - 2 - 1
    assert counted.without_vector == scanned.without_vector == 1
    store.close()
