"""Forgetting on request: the selected items go, live and archived, with every trace a tool,
resource or search could show; nothing else goes; a dry run and a call without selectors
delete nothing."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import anyio
import mcp
import pytest
from mcp.types import TextResourceContents

from ralph_context import Engine, InvalidInput, ItemNotFound
from ralph_context.arguments import NewItem
from ralph_context.models import ContextItem, ContextType, IterationResult
from ralph_context.storage.store.iterations import FORGOTTEN
from tests.helpers import Loader, SettingsFactory, files_holding, marker
from tests.server.mcp_scenario import call
from tests.server_process import stdio_server

SECRET = "the staging database password is hunter2-zanzibar"
KEPT = "retry the upload with exponential backoff when S3 answers 503"


async def test_forget_deletes_the_selected_items_live_and_archived(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        secret = await engine.store(SECRET, "output", tags=["secret"])
        old_secret = await engine.store(SECRET + " (old copy)", "output", tags=["secret"])
        kept = await engine.store(KEPT, "skill", tags=["upload"])
        await engine.mark_useful(secret.id, helpful=True)
        storage = engine._require_storage()
        await storage.archive_items([old_secret.id])

        with pytest.raises(InvalidInput, match="at least one selector"):
            await engine.forget()
        dry = await engine.forget(tags=["secret"], dry_run=True)
        assert dry.dry_run and set(dry.item_ids) == {secret.id, old_secret.id}
        assert (await engine.get(secret.id)).content == SECRET  # nothing went

        report = await engine.forget(tags=["secret"], context_types=[ContextType.OUTPUT])
        assert not report.dry_run and report.count == 2

        for gone in (secret.id, old_secret.id):
            with pytest.raises(ItemNotFound):
                await engine.get(gone)
        found = await engine.search("staging database password hunter2")
        assert all("hunter2" not in hit.item.content for hit in found.items)
        stats = await engine.stats()
        assert stats.items == 1 and stats.archived == 0
        assert (await engine.get(kept.id)).content == KEPT
        # Selectors combine with AND: the kept skill carries no "secret" tag.
        assert (await engine.forget(tags=["upload"], context_types=["output"])).count == 0


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_forget_context_through_the_real_server_leaves_no_trace(tmp_path: Path) -> None:
    params = stdio_server(tmp_path)
    with anyio.fail_after(180):
        async with mcp.Client(params) as client:
            secret = await call(
                client, "store_context", content=SECRET, context_type="output", tags=["secret"]
            )
            await call(client, "store_context", content=KEPT, context_type="skill")
            refused = await client.call_tool("forget_context", {})
            assert refused.is_error
            forgotten = await call(client, "forget_context", item_ids=[secret["id"]])
            assert forgotten.pop("versions_removed") >= 1
            assert forgotten == {
                "dry_run": False,
                "count": 1,
                "item_ids": [secret["id"]],
                "iterations": [],
                "cleared_iterations": [],
                "purged": True,
            }

            found = await call(client, "get_relevant_context", query="staging password hunter2")
            assert all("hunter2" not in hit["item"]["content"] for hit in found["items"])
            with pytest.raises(mcp.MCPError, match="no context item"):
                await client.read_resource(f"context://items/{secret['id']}")
            stats = await call(client, "get_context_stats")
            assert stats["items"] == 1
            resource = (await client.read_resource("context://stats")).contents[0]
            assert isinstance(resource, TextResourceContents)
            assert json.loads(resource.text)["items"] == 1
    # The server's store: the secret on no file, every file owner-only.
    store = tmp_path / "store"
    assert files_holding(store, "hunter2") == []
    modes = {stat.S_IMODE(p.stat().st_mode) for p in store.rglob("*") if p.is_file()}
    folders = {stat.S_IMODE(p.stat().st_mode) for p in (store, *store.rglob("*")) if p.is_dir()}
    assert (modes, folders) == ({0o600}, {0o700})


def _hundred(secret: str, kind: str) -> list[NewItem]:
    """100 items for one write (one data file); the 43rd holds ``secret``."""
    return [
        NewItem(
            f"the deploy key is {secret}" if n == 42 else f"routine note {n} on the {kind} build",
            kind,
            tags=[secret] if n == 42 else ["routine"],
        )
        for n in range(100)
    ]


async def _iterations_with(engine: Engine, secret: str, marked: int) -> ContextItem:
    """Iterations 1-100, compacted into one file; ``marked`` failed with ``secret``."""
    error_item = None
    for n in range(1, 101):
        error = f"push rejected: token {secret} expired" if n == marked else None
        summary = f"tried the token {secret}" if n == marked else f"iteration {n} went fine"
        result = IterationResult(iteration=n, success=error is None, summary=summary, error=error)
        stored = await engine.record_iteration(result)
        error_item = stored or error_item
    assert error_item is not None
    await engine.maintain()
    return error_item


async def test_a_forgotten_item_leaves_no_file_of_the_store(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """The acceptance of issue 38: a marker in an item sharing its data file with 99 others
    (hot table, archive, an iteration's error) is in no file of the store once forgotten."""
    settings = make_settings(lifecycle={"auto_run": False})
    root = settings.store_path()
    assert isinstance(root, Path)
    hot, cold, failed = marker(), marker(), marker()
    async with Engine(settings, model_loader=shared_model) as engine:
        live = await engine.store_many(_hundred(hot, "output"))
        archived = await engine.store_many(_hundred(cold, "task"))
        await engine._require_storage().archive_items([i.id for i in archived])
        error_item = await _iterations_with(engine, failed, marked=43)
        await engine.maintain()
        for secret in (hot, cold, failed):
            assert files_holding(root, secret), "the test's marker must be on disk first"

        report = await engine.forget(item_ids=[live[42].id, archived[42].id, error_item.id])

        assert report.count == 3 and report.cleared_iterations == (43,)
        cleared = await engine.iteration(43)
        assert (cleared.summary, cleared.error, cleared.success) == (FORGOTTEN, FORGOTTEN, False)
        assert [r.iteration for r in await engine.recent_iterations(100)][-1] == 1
        for secret in (hot, cold, failed):
            assert files_holding(root, secret) == []
        stats = await engine.stats()
        assert (stats.items, stats.archived, stats.iterations) == (99, 99, 100)


async def test_forget_by_iteration_takes_the_records_and_the_items_made_in_them(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    root = settings.store_path()
    assert isinstance(root, Path)
    secret = marker()
    async with Engine(settings, model_loader=shared_model) as engine:
        error_item = await _iterations_with(engine, secret, marked=43)
        noted = await engine.store(f"noted in 43: {secret}", "output", iteration=43)
        elsewhere = await engine.store("noted in 44", "output", iteration=44)

        for bad, named in (("43", "iterations"), ([-1], "iterations"), ([True], "iterations")):
            with pytest.raises(InvalidInput, match=named):
                await engine.forget(iterations=bad)  # type: ignore[arg-type]
        dry = await engine.forget(iterations=[43], dry_run=True)
        assert dry.iterations == (43,) and set(dry.item_ids) == {error_item.id, noted.id}
        assert (await engine.iteration(43)).error is not None  # nothing went

        report = await engine.forget(iterations=[43])

        assert report.iterations == (43,) and report.cleared_iterations == ()
        assert set(report.item_ids) == {error_item.id, noted.id}
        with pytest.raises(ItemNotFound):
            await engine.iteration(43)
        assert (await engine.get(elsewhere.id)).content == "noted in 44"
        assert files_holding(root, secret) == []

        older = await engine.forget(older_than_iteration=10)
        assert older.iterations == tuple(range(1, 10))
        remaining = [r.iteration for r in await engine.recent_iterations(1000)]
        assert min(remaining) == 10 and 43 not in remaining and len(remaining) == 90
        # Picked by type too, records are not items: they stay.
        typed = await engine.forget(older_than_iteration=20, context_types=["output"])
        assert typed.iterations == () and len(await engine.recent_iterations(1000)) == 90
