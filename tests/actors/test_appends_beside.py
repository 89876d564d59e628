"""Appends beside maintenance (``actors.storage.beside``): with a maintenance held in the
middle of its work, an item stored meanwhile is written and answered before it ends, and a
delete sent meanwhile waits for it; nothing is lost either way."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import anyio
import pytest

from ralph_context import Engine
from ralph_context.storage.lance_store import LanceStore
from tests.helpers import Loader, SettingsFactory

pytestmark = pytest.mark.model


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_store_commits_while_a_maintenance_runs_and_a_delete_waits_for_it(
    make_settings: SettingsFactory, shared_model: Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, release = threading.Event(), threading.Event()
    original = LanceStore.maintain

    def held_maintain(self: LanceStore, **options: Any) -> Any:
        held.set()
        release.wait(60)
        return original(self, **options)

    async with Engine(make_settings(), model_loader=shared_model) as engine:
        first = await engine.store("the deploy needs the VPN", "output")
        storage = engine._require_storage()
        monkeypatch.setattr(LanceStore, "maintain", held_maintain)
        order: list[str] = []
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:

                async def settle() -> None:
                    await storage.settle()
                    order.append("maintenance")

                async def delete() -> None:
                    await storage.delete_items([first.id])
                    order.append("delete")

                group.start_soon(settle)
                await anyio.to_thread.run_sync(held.wait, 60)
                stored = await engine.store("stored while the maintenance runs", "output")
                order.append("store")
                group.start_soon(delete)
                await anyio.sleep(0.5)  # the delete is queued behind the maintenance
                assert order == ["store"] and not release.is_set()
                release.set()
        # Both done once it was released (the delete is served as the maintenance ends,
        # before the settling pass's own caller hears back).
        assert order[0] == "store" and sorted(order[1:]) == ["delete", "maintenance"]
        assert [item.id for item in await storage.get_items([stored.id])] == [stored.id]
        assert await storage.get_items([first.id]) == []


async def _held_settle(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, while_held: Any, after: Any
) -> None:
    """Run a settling maintenance held at its start; ``while_held()`` runs then; once it is
    released and its own work has ended, ``after()`` runs (the answers may still be due)."""
    held, release, ended = threading.Event(), threading.Event(), threading.Event()
    original = LanceStore.maintain

    def held_maintain(self: LanceStore, **options: Any) -> Any:
        held.set()
        release.wait(60)
        try:
            return original(self, **options)
        finally:
            ended.set()

    monkeypatch.setattr(LanceStore, "maintain", held_maintain)
    storage = engine._require_storage()
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(storage.settle)
            await anyio.to_thread.run_sync(held.wait, 60)
            await while_held(group)
            release.set()
            await anyio.to_thread.run_sync(ended.wait, 60)
            await after()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_background_work_kept_behind_a_maintenance_waits_for_a_quiet_moment(
    make_settings: SettingsFactory, shared_model: Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lifecycle step sent while a maintenance runs is kept for after it; served the
    moment it ended, it landed inside the loop's next search. It waits until no request
    is in flight."""
    async with Engine(make_settings(), model_loader=shared_model) as engine:
        old = await engine.store("an old note to archive", "output")
        storage = engine._require_storage()
        done: list[str] = []

        async def archive() -> None:
            await storage.archive_items([old.id])
            done.append("archived")

        search = contextlib.ExitStack()

        async def send(group: anyio.abc.TaskGroup) -> None:
            group.start_soon(archive)
            await anyio.sleep(0.1)  # kept behind the maintenance
            # A search starts before the maintenance ends (started after it, it raced the
            # kept step's serving and sometimes came second).
            search.enter_context(engine._foreground.busy())

        async def in_a_search() -> None:
            with search:
                await anyio.sleep(0.3)  # the maintenance has ended meanwhile
                assert done == []
            with anyio.fail_after(5):
                while not done:  # noqa: ASYNC110 - a list, no event to wait on
                    await anyio.sleep(0.01)

        await _held_settle(engine, monkeypatch, send, in_a_search)
        assert done == ["archived"]
        assert await storage.get_items([old.id]) == []


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_callers_request_kept_beside_background_work_is_served_at_once(
    make_settings: SettingsFactory, shared_model: Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Background work waits for quiet only on its own: a caller's request kept with it
    (a delete, which is in flight itself) has both served as the maintenance ends."""
    async with Engine(make_settings(), model_loader=shared_model) as engine:
        old = await engine.store("an old note to archive", "output")
        gone = await engine.store("a note to delete", "output")
        storage = engine._require_storage()
        done: list[str] = []

        async def archive() -> None:
            await storage.archive_items([old.id])
            done.append("archived")

        async def delete() -> None:
            with engine._foreground.busy():  # a caller's request, in flight
                await storage.delete_items([gone.id])
            done.append("deleted")

        async def send(group: anyio.abc.TaskGroup) -> None:
            group.start_soon(archive)
            await anyio.sleep(0.1)
            group.start_soon(delete)
            await anyio.sleep(0.1)

        async def soon() -> None:
            with anyio.fail_after(0.4):  # under the quiet wait's bound of 0.5 s
                while len(done) < 2:  # noqa: ASYNC110 - a list, no event to wait on
                    await anyio.sleep(0.01)

        await _held_settle(engine, monkeypatch, send, soon)
        assert sorted(done) == ["archived", "deleted"]
