"""A server killed with SIGKILL during ``forget_context`` (issue 62): the forget is finished
when the store next opens, its purge of old versions included, so the forgotten text is on no
file of the store; and a forget of the same item repeated afterwards finds nothing and says
that it purged the store's files all the same. The real server process, its real client,
the real CLI."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import anyio
import pytest

from ralph_context.storage.store.forget import PENDING
from tests.helpers import files_holding, marker
from tests.server.mcp_scenario import call
from tests.server_process import owner_client, run_cli, start_http_server, store_config

# Items stored beside the forgotten one: enough that the purge takes a while to land in.
NOTES = 1_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_forget_killed_midway_is_finished_at_the_next_open(tmp_path: Path) -> None:
    store = tmp_path / "store"
    config = store_config(tmp_path / "ralph.yaml", store)
    secret = marker()
    process, url = start_http_server(config)
    plan = store / PENDING
    try:
        with anyio.fail_after(240):
            async with owner_client(url, config) as client:
                items = [
                    {"content": f"note {n} about the build cache", "context_type": "output"}
                    for n in range(NOTES)
                ]
                items[NOTES // 2]["content"] = f"the vault token is {secret}"
                stored = await call(client, "store_contexts", items=items)
                doomed = stored["items"][NOTES // 2]["id"]
                assert files_holding(store, secret), "the marker is on disk first"

                async def forget() -> None:
                    try:
                        await client.call_tool("forget_context", {"item_ids": [doomed]})
                    except Exception:  # the server dies under it: no answer is expected
                        return

                async with anyio.create_task_group() as group:
                    group.start_soon(forget)
                    # The plan is written before the first delete and removed after the
                    # purge: killed while it is there, the forget is cut off midway.
                    await anyio.to_thread.run_sync(_appears, plan)
                    process.send_signal(signal.SIGKILL)
                    group.cancel_scope.cancel()
    finally:
        process.stop(kill=True)
    assert plan.exists(), "the kill landed inside the forget"

    opened = run_cli(config, "stats", "--json")  # a writer's open finishes the forget

    assert opened.returncode == 0, opened.stderr
    assert '"items": 999' in opened.stdout.replace(",\n", "\n")
    assert not plan.exists()
    assert files_holding(store, secret) == []
    again = run_cli(config, "forget", "--id", doomed)
    assert again.returncode == 0, again.stderr
    assert "forgot 0 item(s)" in again.stdout and "purged the store's files" in again.stdout


def _appears(path: Path, within: float = 120.0) -> None:
    """Return once ``path`` exists (looked at every 2 ms: another process writes it).

    Raises:
        AssertionError: It did not appear within ``within`` seconds.
    """
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.002)
