"""The engine on a store on object storage (a local S3 endpoint): what it does on a local
store works there, and two engines (replicas) share the store."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pyarrow as pa
import pytest

from ralph_context import ContextState, Engine, IdempotencyConflict
from ralph_context.config import Settings
from ralph_context.object_location import ObjectLocation
from ralph_context.storage.reindex import reindex_store
from ralph_context.storage.replicas.lease import MaintenanceLease
from ralph_context.storage.store.upkeep import ANOTHER_REPLICA
from ralph_context.storage.table.pack_space import PackSpace
from ralph_context.transfer.export_import import export_store, import_store
from tests.helpers import Loader, SettingsFactory, advance
from tests.lifecycle.test_lifecycle import REPORT

AGES = {
    "aging_after_iterations": 1,
    "summarize_after_iterations": 3,
    "archive_after_iterations": 5,
    "prune_after_iterations": 50,
    "auto_run": False,
}


def on_s3(make_settings: SettingsFactory, store: ObjectLocation) -> Settings:
    """Settings of a store at ``store``; its replicas look for each other's writes every
    0.2 s, and lifecycle passes run only when a test asks."""
    storage = {"path": store.uri, "options": store.lance_options, "refresh_seconds": 0.2}
    return make_settings(storage=storage, lifecycle=AGES)


async def test_store_search_forget_and_maintain_on_s3(
    make_settings: SettingsFactory, shared_model: Loader, s3_store: ObjectLocation
) -> None:
    settings = on_s3(make_settings, s3_store)
    with anyio.fail_after(120):
        async with Engine(settings, model_loader=shared_model) as engine:
            pool = await engine.store("the connection pool of the payments db ran dry", "error")
            await engine.store("lunch was pizza on friday", "output", tags=["food"])
            found = await engine.search("database connection pool exhausted")
            assert found.items[0].item.id == pool.id
            assert found.tier.value == "semantic"
            report = await engine.maintain()
            assert report.compacted
            assert (await engine.search("connection pool")).items[0].item.id == pool.id
            forgotten = await engine.forget(item_ids=[pool.id])
            assert forgotten.item_ids == (pool.id,)
            after = await engine.search("database connection pool exhausted")
            assert pool.id not in {r.item.id for r in after.items}
            stats = await engine.stats()
            assert stats.items == 1
            assert stats.size_bytes > 0
    # Everything lives in the bucket: the tables and the model record.
    assert s3_store.read("store.json") is not None
    assert "context_items.lance" in s3_store.folders()
    # ... and a later session finds it there.
    async with Engine(settings, model_loader=shared_model) as engine:
        again = await engine.search("pizza")
        assert [r.item.content for r in again.items][:1] == ["lunch was pizza on friday"]


async def test_lifecycle_archives_on_s3_and_the_archive_answers(
    make_settings: SettingsFactory, shared_model: Loader, s3_store: ObjectLocation
) -> None:
    settings = on_s3(make_settings, s3_store)
    text = REPORT
    with anyio.fail_after(180):
        async with Engine(settings, model_loader=shared_model) as engine:
            item = await engine.store(text, "iteration", iteration=0)
            states = []
            for now in (2, 4, 6):
                await advance(engine, now)
                report = await engine.run_lifecycle()
                assert ANOTHER_REPLICA not in report.notes
                states.append((await engine.get(item.id)).state)
                if now == 4:  # summarized: the original is kept in the archive
                    original = await engine.original(item.id)
                    assert original is not None
                    assert original == text
            assert states == [ContextState.AGING, ContextState.SUMMARIZED, ContextState.ARCHIVED]
            found = await engine.search("database connection pool exhausted")
            assert item.id in {r.item.id for r in found.items}


async def test_reindex_rewrites_a_store_on_s3(
    make_settings: SettingsFactory,
    shared_model: Loader,
    embedder: object,
    s3_store: ObjectLocation,
) -> None:
    settings = on_s3(make_settings, s3_store)
    async with Engine(settings, model_loader=shared_model) as engine:
        for n in range(5):
            await engine.store(f"note {n} about the deploy pipeline", "output")
    count = await anyio.to_thread.run_sync(
        lambda: reindex_store(s3_store, embedder)  # type: ignore[arg-type]
    )
    assert count == 5
    async with Engine(settings, model_loader=shared_model) as engine:
        assert (await engine.stats()).items == 5
        assert (await engine.search("deploy pipeline")).items


async def test_two_replicas_share_writes_and_one_maintains(
    make_settings: SettingsFactory, shared_model: Loader, s3_store: ObjectLocation
) -> None:
    settings = on_s3(make_settings, s3_store)
    with anyio.fail_after(180):
        async with (
            Engine(settings, model_loader=shared_model) as a,
            Engine(settings, model_loader=shared_model) as b,
        ):
            written = await a.store("the cache key includes the locale", "output")
            # Found by the other replica once it looks again (refresh_seconds: 0.2).
            for _ in range(100):
                seen = await b.search("cache key locale")
                if written.id in {r.item.id for r in seen.items}:
                    break
                await anyio.sleep(0.1)
            else:
                raise AssertionError("replica b never saw replica a's write")
            assert (await b.get(written.id)).content == written.content
            # Both write at once: nothing lost, nothing doubled.
            async with anyio.create_task_group() as group:
                for n in range(10):
                    group.start_soon(a.store, f"a wrote note {n}", "output")
                    group.start_soon(b.store, f"b wrote note {n}", "output")
            await anyio.sleep(0.5)
            assert (await b.stats()).items == 21
            # One maintains; the other is told another replica does.
            first = await a.maintain()
            second = await b.maintain()
            assert first.compacted and not first.notes
            assert not second.compacted and second.notes == (ANOTHER_REPLICA,)
            lifecycle = await b.run_lifecycle()
            assert lifecycle.notes == (ANOTHER_REPLICA,)
            assert MaintenanceLease(s3_store, 30).holder_now() is not None
        # Closing released the lease: the next replica need not wait for it to lapse.
        assert MaintenanceLease(s3_store, 30).holder_now() is None


async def test_a_key_one_replica_claimed_refuses_other_arguments_on_the_other(
    make_settings: SettingsFactory, shared_model: Loader, s3_store: ObjectLocation
) -> None:
    """A client whose write timed out on one replica retries on another: the same
    arguments get the first item there, other ones the refusal."""
    settings = on_s3(make_settings, s3_store)
    with anyio.fail_after(120):
        async with (
            Engine(settings, model_loader=shared_model) as a,
            Engine(settings, model_loader=shared_model) as b,
        ):
            stored = "the cache key includes the locale"
            first = await a.store(stored, "output", idempotency_key="k")
            with pytest.raises(IdempotencyConflict, match="'k' was used for a different request"):
                await b.store("the cache key includes the region", "output", idempotency_key="k")
            retried = await b.store(stored, "output", idempotency_key="k")
            assert retried.id == first.id
            # b looked at the latest version for a's item: it sees one item, its own none.
            assert (await b.stats()).items == 1


def test_a_local_store_has_no_lease(tmp_path: Path) -> None:
    settings = Settings.load(None).with_overrides(storage={"path": str(tmp_path / "s")})
    assert isinstance(settings.store_root(), Path)


async def test_export_import_and_pack_tables_on_s3(
    make_settings: SettingsFactory, shared_model: Loader, s3_store: ObjectLocation
) -> None:
    settings = on_s3(make_settings, s3_store)
    async with Engine(settings, model_loader=shared_model) as engine:
        kept = await engine.store("the wheel cache is keyed by the lockfile hash", "skill")
        out = io.StringIO()
        exported = await export_store(engine, out)
        assert exported.items == 1

        def pack_table(space: PackSpace) -> int:
            table = space.db.create_table("pack_probe", pa.table({"n": [1, 2, 3]}))
            return int(table.count_rows())

        # A tool pack's own tables live beside the store's, on object storage too.
        assert await engine.in_packs(pack_table) == 3
    assert "pack_probe.lance" in s3_store.folders()
    copy = on_s3(make_settings, s3_store / "copy")
    async with Engine(copy, model_loader=shared_model) as engine:
        imported = await import_store(engine, io.StringIO(out.getvalue()))
        assert imported.items == 1
        assert (await engine.get(kept.id)).content == kept.content
        assert (await engine.search("lockfile wheel cache")).items[0].item.id == kept.id
