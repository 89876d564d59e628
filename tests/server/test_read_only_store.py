"""A server whose store's disk fills up, as a client and a person see it: the write refused
with its cause, ``health_check`` and the console's health page saying so, every earlier
item still found, and writes back once space is freed (a real server process on a small
tmpfs: root only, as in CI; see ``tests/disk_faults.py``)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx
import mcp
import pytest

from tests.disk_faults import fill
from tests.server.console_servers import console_config, console_url, mcp_client, store
from tests.server.mcp_scenario import call, error_of
from tests.server_process import start_http_server

NOTES = [
    ("The deploy script restarts the payment service after the migration.", "output"),
    ("Grandma's tomato soup needs basil, garlic and two hours on a low flame.", "output"),
    ("Upgrading numpy broke the pickled models trained with the old version.", "error"),
]
# The probes that resume writes are at most 10 s apart: room for a loaded machine.
RESUME_WITHIN = 30.0


async def _top(client: mcp.Client, query: str) -> str | None:
    found = await call(client, "get_relevant_context", query=query, max_items=1, min_score=0)
    assert found["stats"]["tier"] == "semantic"
    return found["items"][0]["item"]["id"] if found["items"] else None


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_full_disk_is_refused_with_its_cause_shown_as_degraded_and_writes_come_back(
    disk: Path,
) -> None:
    process, url = start_http_server(console_config(disk, tokens=False))
    try:
        with anyio.fail_after(180):
            ids = await store(url, NOTES)
            free = fill(disk)
            async with mcp_client(url) as client:
                refused = await error_of(
                    client, "store_context", content="no room", context_type="output"
                )
                assert "store is full: No space left on device at " in refused
                health = await call(client, "health_check")
                assert health["status"] == "degraded"
                assert health["actors"]["storage"]["state"] == "degraded: read-only"
                assert health["write_error"].startswith("store is full: No space left on device")
                for (content, _kind), item_id in zip(NOTES, ids, strict=True):
                    assert await _top(client, content) == item_id
            async with httpx.AsyncClient() as http:
                page = await http.get(console_url(url) + "/health", follow_redirects=True)
            assert page.status_code == 200
            assert 'data-testid="write-error"' in page.text
            assert "store is full: No space left on device" in page.text

            free()
            async with mcp_client(url) as client:
                deadline = time.monotonic() + RESUME_WITHIN
                while (await call(client, "health_check"))["write_error"] is not None:
                    # Another process: no event to wait on; its probes are what is waited for.
                    assert time.monotonic() < deadline, "writes did not resume"
                    await anyio.sleep(0.2)
                stored = await call(
                    client,
                    "store_context",
                    content="Room on the disk again.",
                    context_type="output",
                )
                assert (await call(client, "health_check"))["status"] == "healthy"
                assert await _top(client, "Room on the disk again.") == stored["id"]
    finally:
        log = process.stop()
    assert "Traceback" not in log
    assert "actor_crashed" not in log
