"""Forgetting on request: the selected items go, live and archived, with every trace a tool,
resource or search could show; nothing else goes; a dry run and a call without selectors
delete nothing."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import mcp
import pytest
from mcp.types import TextResourceContents

from ralph_context import Engine, InvalidInput, ItemNotFound
from ralph_context.models import ContextType
from tests.helpers import Loader, SettingsFactory
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
            assert forgotten == {"dry_run": False, "count": 1, "item_ids": [secret["id"]]}

            found = await call(client, "get_relevant_context", query="staging password hunter2")
            assert all("hunter2" not in hit["item"]["content"] for hit in found["items"])
            with pytest.raises(mcp.MCPError, match="no context item"):
                await client.read_resource(f"context://items/{secret['id']}")
            stats = await call(client, "get_context_stats")
            assert stats["items"] == 1
            resource = (await client.read_resource("context://stats")).contents[0]
            assert isinstance(resource, TextResourceContents)
            assert json.loads(resource.text)["items"] == 1
