"""Appends beside maintenance (``actors.storage_beside``): with a maintenance held in the
middle of its work, an item stored meanwhile is written and answered before it ends, and a
delete sent meanwhile waits for it; nothing is lost either way."""

from __future__ import annotations

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
