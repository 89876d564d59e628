"""Forget is final (issue 62): nothing that knew a forgotten item brings it back. An import
of an export taken before the forget skips it (``include_forgotten`` brings it back on
purpose), a retry of its keyed ``store_context`` is refused, a capture the hooks spooled
before the forget is dropped when the spool is taken; its idempotency key never reaches the
disk as given, and goes with the forget; a forget that finds nothing still purges what an
earlier delete left on disk, and says so. A real engine on LanceDB in a temp dir."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest

from ralph_context import Engine, ItemForgotten, ItemNotFound, Settings
from ralph_context.config.agents import AgentsSettings
from ralph_context.models import IterationResult
from ralph_context.server.agents.daemon import ingest_spool
from ralph_context.server.agents.events import AgentEvents
from ralph_context.server.agents.project import spool
from ralph_context.transfer.export_import import export_store, import_store
from tests.agents.payloads import failed
from tests.helpers import Loader, SettingsFactory, files_holding, marker

# A GitHub token used as an idempotency key: a client's key is any text it chose.
TOKEN_KEY = "ghp_" + "Zq7Lm2Rx9Tn4Vb8Wc3Yd6Fg1Hj5Kp0MsQeRtYuAb"


@pytest.fixture
def store(make_settings: SettingsFactory) -> tuple[Settings, Path]:
    """Settings of a store on a temp dir (lifecycle passes only when asked), and its folder."""
    settings = make_settings(lifecycle={"auto_run": False})
    root = settings.store_path()
    assert isinstance(root, Path)
    return settings, root


async def _exported(engine: Engine) -> str:
    out = io.StringIO()
    await export_store(engine, out)
    return out.getvalue()


async def test_an_import_of_an_export_taken_before_a_forget_does_not_bring_it_back(
    store: tuple[Settings, Path], shared_model: Loader
) -> None:
    settings, root = store
    secret = marker()
    async with Engine(settings, model_loader=shared_model) as engine:
        doomed = await engine.store(f"the staging password is {secret}", "output", tags=["x"])
        kept = await engine.store("retry uploads with backoff", "skill", iteration=2)
        await engine.record_iteration(
            IterationResult(iteration=1, success=False, summary="s", error=f"failed: {secret}")
        )
        backup = await _exported(engine)
        assert secret in backup
        assert (await engine.forget(item_ids=[doomed.id])).count == 1
        by_iteration = await engine.forget(iterations=[1])  # its record and its error item
        assert by_iteration.count == 1 and by_iteration.iterations == (1,)
        gone = [doomed.id, *by_iteration.item_ids]

        imported = await import_store(engine, io.StringIO(backup))

        # The forgotten item, the iteration's error item and its record are skipped.
        assert imported.forgotten == 3 and imported.items == 0
        for item_id in gone:
            with pytest.raises(ItemNotFound):
                await engine.get(item_id)
        assert [r.iteration for r in await engine.recent_iterations(10)] == []
        assert (await engine.get(kept.id)).content == "retry uploads with backoff"
        assert files_holding(root, secret) == []
        # The same text under another id (a copy of the file edited by hand): skipped too.
        edited = backup.replace(doomed.id, "1f0c9b1e-0000-4000-8000-000000000001")
        assert (await import_store(engine, io.StringIO(edited))).forgotten >= 1

        back = await import_store(engine, io.StringIO(backup), include_forgotten=True)

        assert back.forgotten == 3 and back.items == 2 and back.iterations == 1
        assert secret in (await engine.get(doomed.id)).content
        assert (await engine.iteration(1)).error == f"failed: {secret}"
        # Brought back on purpose, its tombstones are lifted: a forget again works as before.
        again = await engine.forget(item_ids=[doomed.id])
        assert again.count == 1


async def test_a_keyed_retry_after_a_forget_is_refused_and_the_key_never_reaches_disk(
    store: tuple[Settings, Path], shared_model: Loader
) -> None:
    settings, root = store
    secret = marker()
    async with Engine(settings, model_loader=shared_model) as engine:
        first = await engine.store(secret, "output", idempotency_key=TOKEN_KEY)
        assert (await engine.store(secret, "output", idempotency_key=TOKEN_KEY)).id == first.id
        await engine.maintain()
        assert files_holding(root, secret), "the search sees the store's text"
        assert files_holding(root, TOKEN_KEY) == []  # a keyed digest, never the key
        keys = engine._require_storage().store.requests.table
        assert keys is not None and keys.count_rows() == 1

        await engine.forget(item_ids=[first.id])

        assert keys.count_rows() == 0  # the forget dropped the item's key
        with pytest.raises(ItemForgotten, match="was forgotten"):
            await engine.store(secret, "output", idempotency_key=TOKEN_KEY)
        with pytest.raises(ItemNotFound):
            await engine.get(first.id)
        assert (await engine.stats()).items == 0
        # A new key is a new request: the text may be stored again, under a new id.
        anew = await engine.store(secret, "output", idempotency_key="another-key")
        assert anew.id != first.id
    # Reopened (the tombstones are the store's, not the process's): still refused.
    async with Engine(settings, model_loader=shared_model) as engine:
        with pytest.raises(ItemForgotten):
            await engine.store(secret, "output", idempotency_key=TOKEN_KEY)
    assert files_holding(root, TOKEN_KEY) == []


async def test_a_keyed_iteration_retried_after_a_forget_is_refused(
    store: tuple[Settings, Path], shared_model: Loader
) -> None:
    settings, _ = store
    async with Engine(settings, model_loader=shared_model) as engine:
        result = IterationResult(iteration=1, success=False, summary="s", error="boom zq7x")
        error_item = await engine.record_iteration(result, idempotency_key="iter-1")
        assert error_item is not None
        await engine.forget(item_ids=[error_item.id])

        with pytest.raises(ItemForgotten):
            await engine.record_iteration(result, idempotency_key="iter-1")

        assert (await engine.iteration(1)).error == "[forgotten]"
        assert (await engine.browse(context_types=["error"])).items == ()


async def test_a_forget_that_finds_nothing_purges_what_an_earlier_delete_left(
    store: tuple[Settings, Path], shared_model: Loader
) -> None:
    """A prune deletes rows without rewriting files (the rows stay on disk until their
    file is compacted): a forget of the same items finds nothing, and purges them."""
    settings, root = store
    secret = marker()
    async with Engine(settings, model_loader=shared_model) as engine:
        note = await engine.store(f"the key is {secret}", "output", tags=["keys"])
        await engine.store("an ordinary note", "output")
        await engine.maintain()
        await engine.mark_useful(note.id, helpful=False)
        pruned = await engine.prune_low_value(min_score=0.4)
        assert list(pruned.pruned) == [note.id]
        assert files_holding(root, secret), "the prune left the row in its file"

        report = await engine.forget(tags=["keys"])

        assert report.count == 0 and report.purged and report.versions_removed >= 1
        assert files_holding(root, secret) == []
        dry = await engine.forget(tags=["keys"], dry_run=True)
        assert not dry.purged  # a dry run purges nothing


async def test_a_capture_spooled_before_a_forget_does_not_bring_it_back(
    store: tuple[Settings, Path], shared_model: Loader, tmp_path: Path
) -> None:
    """The same failure twice: one capture stored, one spooled while no server ran; the
    stored one is forgotten, then the spool is taken."""
    project = tmp_path / "project"
    project.mkdir()
    secret = marker()
    capture = failed(project, "./deploy.sh", f"DeployError: vault answered {secret}", "s1")
    assert spool(project, "claude", capture)  # spooled first (before the forget)
    settings, _ = store
    async with (
        Engine(settings, model_loader=shared_model) as engine,
        anyio.create_task_group() as group,
    ):
        events = AgentEvents(engine, AgentsSettings(), group)
        await events.handle("claude", capture)
        await events.wait_for_captures("s1", 30)
        (stored,) = (await engine.browse(context_types=["error"])).items
        assert secret in stored.content
        await engine.forget(item_ids=[stored.id])

        assert await ingest_spool(project, events) == 1
        await events.wait_for_captures("s1", 30)

        assert (await engine.browse(context_types=["error"])).items == ()
        # The same failure happening after the forget is a new memory, and is stored.
        await events.handle(
            "claude", failed(project, "./deploy.sh", f"DeployError: vault answered {secret}", "s2")
        )
        await events.wait_for_captures("s2", 30)
        assert len((await engine.browse(context_types=["error"])).items) == 1
        group.cancel_scope.cancel()
