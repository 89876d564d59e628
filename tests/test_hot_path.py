"""The hot path's mechanisms: reads beside writes, sliced lifecycle passes, the query session.

Speed itself is measured by ``ralph-context bench latency``, not here: these tests check the
order of events (a search answers while a write is still running), never a duration.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import numpy as np
import pytest

from ralph_context import (
    ContextItem,
    ContextState,
    ContextType,
    Engine,
    IterationResult,
    NewItem,
    Tier,
)
from ralph_context.actors.storage.actor import FlushUsage, StorageActor
from ralph_context.embeddings.local import BULK_TEXTS, LocalEmbedder
from ralph_context.engine import wiring
from ralph_context.storage.maintenance import upkeep_worker
from ralph_context.storage.maintenance.upkeep_worker import UpkeepWorker
from ralph_context.storage.table.pack_space import PackSpace
from tests.helpers import Loader, SettingsFactory


async def add_output(storage: StorageActor, text: str) -> None:
    """One item written straight through the storage actor (no embedding)."""
    item = ContextItem(content=text, content_type=ContextType.OUTPUT)
    await storage.add_items([(item, None)])


async def fill_while_busy(engine: Engine, *, batches: int, topic: str) -> list[int]:
    """``batches`` writes of 30 items with a request always in flight; the rows no index
    covers after each (read once any maintenance it set off has run)."""
    storage = engine._require_storage()
    seen = []
    with engine._foreground.busy():
        for batch in range(batches):
            texts = [f"note {batch}-{n} on the {topic}" for n in range(30)]
            await engine.store_many([NewItem(t, ContextType.OUTPUT) for t in texts])
            await storage.call(FlushUsage(), timeout=60)  # after any maintenance
            seen.append(storage.store.unindexed_rows)
    return seen


async def test_a_search_answers_while_a_write_is_still_running(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """A long write (here a pack function holding the single writer) must not hold up
    reads: before, every search queued behind it in the storage actor's inbox."""
    release = threading.Event()
    events: list[str] = []

    def slow_write(_space: PackSpace) -> None:
        release.wait(timeout=20)

    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            await engine.store("Retry the upload with exponential backoff", "skill")

            async def writer() -> None:
                await engine.in_packs(slow_write)
                events.append("write done")

            async with anyio.create_task_group() as group:
                group.start_soon(writer)
                await anyio.sleep(0.2)  # the write is in the storage actor's lane now
                result = await engine.search("upload keeps failing")
                events.append("search done")
                stats = await engine.stats()
                events.append("stats done")
                release.set()
    assert events == ["search done", "stats done", "write done"]
    assert result.tier is Tier.SEMANTIC and result.items
    assert stats.items == 1


async def test_a_pass_archiving_more_than_a_slice_archives_everything_due(
    make_settings: SettingsFactory, shared_model: Loader, embedder: LocalEmbedder
) -> None:
    """Archiving runs in slices of 128 ids; a pass over 600 old items still moves every one,
    and the young ones stay."""
    texts = [f"note {n}: the build of module {n % 17} took {n} seconds" for n in range(600)]
    vectors = embedder.embed(texts, 32)
    old = [
        (ContextItem(content=t, content_type=ContextType.OUTPUT, created_iteration=0), v)
        for t, v in zip(texts, vectors, strict=True)
    ]
    with anyio.fail_after(120):
        async with Engine(
            make_settings(lifecycle={"auto_run": False}), model_loader=shared_model
        ) as engine:
            await engine.store_embedded(old)
            (young,) = await engine.store_many([NewItem("fresh note", "output", iteration=60)])
            await engine.record_iteration(IterationResult(iteration=60, summary="s", success=True))
            report = await engine.run_lifecycle()
            stats = await engine.stats()
            kept = await engine.get(young.id)
    assert len(report.archived) == 600
    assert stats.items == 1 and stats.archived == 600
    assert kept.content == "fresh note"


def test_a_query_embeds_the_same_in_the_query_session(embedder: LocalEmbedder) -> None:
    """Queries (and small batches) go to their own session, bulk batches to the other: the
    same text must get the same vector either way, or queries would drift from what was
    stored."""
    texts = ["ModuleNotFoundError: No module named 'requests'", "pin the wheel cache key"]
    as_query = embedder.embed(texts, 2, query=True)
    as_small_batch = embedder.embed(texts, 2)
    filler = [f"a text to make a bulk batch, number {n}" for n in range(BULK_TEXTS)]
    as_bulk = embedder.embed([*texts, *filler], 32)[:2]
    np.testing.assert_allclose(as_query, as_bulk, atol=1e-5)
    np.testing.assert_allclose(as_small_batch, as_bulk, atol=1e-5)


async def test_an_item_stored_after_the_index_was_built_is_found_at_once(
    make_settings: SettingsFactory, shared_model: Loader, embedder: LocalEmbedder
) -> None:
    """Rows written after the vector index was trained are searched exactly until the next
    compaction folds them in: a just-stored item is found by the very next search."""
    texts = [f"deploy log {n}: service {n % 11} restarted after {n} s" for n in range(400)]
    bulk = [
        (ContextItem(content=t, content_type=ContextType.OUTPUT), v)
        for t, v in zip(texts, embedder.embed(texts, 32), strict=True)
    ]
    settings = make_settings(storage={"vector_index_min_rows": 256, "optimize_every_writes": 1000})
    with anyio.fail_after(120):
        async with Engine(settings, model_loader=shared_model) as engine:
            await engine.store_embedded(bulk)
            await engine.maintain()
            assert (await engine.stats()).vector_index
            fresh = await engine.store("The TLS certificate for api.example.org expired", "error")
            result = await engine.search("certificate expired on the api host", max_items=3)
    assert result.items[0].item.id == fresh.id


async def test_maintenance_due_during_a_request_runs_once_the_loop_is_calm(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """Compaction is due every 2 writes here; while a search or store is in flight it is put
    off (the writes keep counting). The writer checks the cadence right after a write, while
    that write's caller is still in flight: the maintenance that fell due runs once the loop
    is calm, with no further write (it used to wait for the overdue mark, four cadences
    later, while every one-row fragment slowed each search)."""
    settings = make_settings(storage={"optimize_every_writes": 2})
    with anyio.fail_after(60):
        async with Engine(settings, model_loader=shared_model) as engine:
            storage = engine._require_storage()
            with engine._foreground.busy():
                for n in range(3):
                    await add_output(storage, f"n{n}")
                waiting = storage._writes
            with anyio.fail_after(20):
                while storage._writes:  # noqa: ASYNC110 - the writer's own counter, no event
                    await anyio.sleep(0.02)
            assert (await engine.stats()).items == 3
    assert waiting == 3


async def test_maintenance_due_before_a_steady_stream_of_requests_runs_within_the_bound(
    make_settings: SettingsFactory, shared_model: Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that asks back to back right after storing never lets the loop calm: the
    maintenance that fell due runs once the wait for calm has reached its bound (here 0.5
    s), with the stream still going and no further write. It used to wait for a pause, and
    every search of the stream paid for the ingest's fragments meanwhile."""
    monkeypatch.setattr(wiring, "_CALM_AT_MOST", 0.5)
    settings = make_settings(storage={"optimize_every_writes": 2})
    with anyio.fail_after(60):
        async with Engine(settings, model_loader=shared_model) as engine:
            storage = engine._require_storage()
            with engine._foreground.busy():  # the stream: a request always in flight
                for n in range(3):
                    await add_output(storage, f"n{n}")
                waiting = storage._writes
                with anyio.fail_after(20):
                    while storage._writes:  # noqa: ASYNC110 - the writer's own counter
                        await anyio.sleep(0.02)
                calm = engine._foreground.calm
            assert (await engine.stats()).items == 3
    assert (waiting, calm) == (3, False)


async def test_a_new_store_filled_back_to_back_is_maintained_before_half_its_rows_go_unindexed(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """Batches stored with a request always in flight and the write cadence far off: once
    the rows no index covers reach half the store (at least a hundred), maintenance runs
    anyway. It used to wait for a pause, and every search meanwhile scanned them all."""
    settings = make_settings(storage={"optimize_every_writes": 10_000})
    with anyio.fail_after(60):
        async with Engine(settings, model_loader=shared_model) as engine:
            seen = await fill_while_busy(engine, batches=8, topic="importer")
    # 30 a batch: maintained at 120 rows (120 unindexed) and at 240 (120 of 240).
    assert seen == [30, 60, 90, 0, 30, 60, 90, 0]


async def test_a_small_store_left_with_a_tenth_of_its_rows_unindexed_is_maintained_once_calm(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """The rows an ingest leaves past its last maintenance: a tenth of a small store (at
    least twenty) makes maintenance due at the next calm, as a thousand rows do at any size.
    They used to wait for 25 more writes; every search meanwhile read them all unindexed
    (conv-26 over MCP: 201 of 419 rows, 9 ms of Lance's CPU a search against 4.5)."""
    settings = make_settings(storage={"optimize_every_writes": 10_000})
    with anyio.fail_after(60):
        async with Engine(settings, model_loader=shared_model) as engine:
            storage = engine._require_storage()
            await fill_while_busy(engine, batches=10, topic="exporter")
            # 300 rows, maintained at 120 and 240 (half unindexed): 60 left, a fifth.
            assert storage.store.unindexed_rows == 60
            for _ in range(200):  # 10 s at most
                if not storage.store.unindexed_rows:
                    break
                await anyio.sleep(0.05)
            assert storage.store.unindexed_rows == 0
            assert (await engine.stats()).items == 300


async def test_overdue_maintenance_under_load_runs_at_the_writers_priority(
    make_settings: SettingsFactory, shared_model: Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Maintenance that runs with requests in flight (four cadences overdue) does its
    upkeep in the writer's process, not in the niced child the searches starve (the
    writer waits for it, and every write with it); in calm it still goes to the child."""
    asked: list[str] = []
    child_asked = threading.Event()
    real = UpkeepWorker._ask

    def ask(
        self: UpkeepWorker, request: dict[str, Any], waited_on: Callable[[], bool]
    ) -> dict[str, Any] | None:
        asked.append(request["op"])
        child_asked.set()
        return real(self, request, waited_on)

    monkeypatch.setattr(UpkeepWorker, "_ask", ask)
    settings = make_settings(storage={"optimize_every_writes": 2})
    with anyio.fail_after(120):
        async with Engine(settings, model_loader=shared_model) as engine:
            storage = engine._require_storage()

            with engine._foreground.busy():
                for n in range(8):  # the eighth write is four cadences of two
                    await add_output(storage, f"busy {n}")
                # Maintenance runs in the writer's lane right after that write was
                # answered: a request through the lane is served once it is done.
                await storage.call(FlushUsage(), timeout=60)
                overdue_ran = storage._writes == 0
                asked_under_load = list(asked)
            await anyio.sleep(engine._foreground.settle * 2)
            await add_output(storage, "calm 1")
            await add_output(storage, "calm 2")
            # Before anything queues behind it (that would hurry the rest of it).
            assert await anyio.to_thread.run_sync(child_asked.wait, 30)
            await storage.call(FlushUsage(), timeout=60)
            asked_in_calm = asked[len(asked_under_load) :]
            stored = (await engine.stats()).items
    assert overdue_ran
    assert asked_under_load == []
    assert "compact" in asked_in_calm
    assert stored == 10


async def test_a_repeated_query_is_embedded_once(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            await engine.store("Retry the upload with exponential backoff", "skill")
            embedding = engine._require_embedding()
            before = embedding.cache_stats["hits"]
            first = await engine.search("why does the upload keep failing")
            second = await engine.search("why does the upload keep failing")
            hits = embedding.cache_stats["hits"] - before
    assert hits == 1
    assert [i.item.id for i in first.items] == [i.item.id for i in second.items]


async def test_rows_no_index_covers_make_compaction_due_before_the_write_cadence(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """An update moves rows out of every index (each search then scans them): once enough
    rows are added or rewritten, compaction runs though few writes were made, and folds
    them back into the full-text index."""
    settings = make_settings(storage={"optimize_every_writes": 1_000})
    with anyio.fail_after(120):
        async with Engine(settings, model_loader=shared_model) as engine:
            storage = engine._require_storage()
            items = [
                (ContextItem(content=f"note {n}", content_type=ContextType.OUTPUT), None)
                for n in range(6_600)
            ]
            await storage.add_items(items[:6_000])
            await engine.maintain()  # every row indexed
            stored = await storage.add_items(items[6_000:])
            # 600 new rows, one write: not yet due (the bar is a tenth of the store, 660).
            unindexed_before = storage.store.unindexed_rows
            await storage.set_state([i.id for i in stored[:500]], ContextState.AGING)
            # Compaction runs in the writer's lane right after it answered: a request
            # through the same lane is served once it is done.
            await storage.call(FlushUsage(), timeout=60)
            unindexed_after = storage.store.unindexed_rows
            index = next(i for i in storage.store.items.list_indices() if i.columns == ["content"])
            fts = storage.store.items.index_stats(index.name)
    assert unindexed_before == 600
    assert unindexed_after == 0
    assert fts.num_unindexed_rows == 0


async def test_the_upkeep_process_starts_half_way_to_the_first_maintenance(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """The niced upkeep process is started once half the cadence of writes is in, before
    any maintenance is due, so the first maintenance does not begin with its start (the
    writes waiting behind it)."""
    worker = upkeep_worker.worker()
    worker.close()
    settings = make_settings(storage={"optimize_every_writes": 4})
    with anyio.fail_after(60):
        async with Engine(settings, model_loader=shared_model) as engine:
            storage = engine._require_storage()
            await add_output(storage, "first")
            await storage.call(FlushUsage(), timeout=60)
            after_one = worker.running
            await add_output(storage, "second")
            # Started after the write is answered (callers first): the actor's next request
            # is taken once that is done.
            await storage.call(FlushUsage(), timeout=60)
            after_two = worker.running
            pending = storage._writes
    assert (after_one, after_two) == (False, True)
    assert pending == 2  # no maintenance has run yet


async def test_a_write_queued_behind_calm_maintenance_hurries_the_rest_of_it(
    make_settings: SettingsFactory, shared_model: Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Maintenance begun in calm sends its operations to the niced child; once a request
    that must wait for it is queued (a delete: appends are served beside it), the operation
    under way finishes there and the rest run in the writer's process (searches would
    starve the child while the request waits)."""
    asked: list[str] = []
    here: list[str] = []
    started, queued = threading.Event(), threading.Event()
    real_ask, real_run = UpkeepWorker._ask, upkeep_worker.run_operation

    def ask(
        self: UpkeepWorker, request: dict[str, Any], waited_on: Callable[[], bool]
    ) -> dict[str, Any] | None:
        asked.append(request["op"])
        if len(asked) == 1:
            started.set()
            queued.wait(30)
        return real_ask(self, request, waited_on)

    def run_here(request: dict[str, Any]) -> None:
        here.append(request["op"])
        real_run(request)

    monkeypatch.setattr(UpkeepWorker, "_ask", ask)
    monkeypatch.setattr(upkeep_worker, "run_operation", run_here)
    settings = make_settings(storage={"optimize_every_writes": 2})
    with anyio.fail_after(120):
        async with Engine(settings, model_loader=shared_model) as engine:
            storage = engine._require_storage()

            await anyio.sleep(engine._foreground.settle * 2)
            await add_output(storage, "calm 1")
            await add_output(storage, "calm 2")  # maintenance is due, in calm: it starts after this
            assert await anyio.to_thread.run_sync(started.wait, 30)
            async with anyio.create_task_group() as group:
                group.start_soon(storage.delete_items, ["no-such-item"])
                while not storage.behind:  # noqa: ASYNC110 - a counter, no event to wait on
                    await anyio.sleep(0.01)
                waiting = storage.behind
                queued.set()
            stored = (await engine.stats()).items
    assert waiting == 1
    assert asked == ["compact"]
    assert "optimize_indices" in here
    assert stored == 2
