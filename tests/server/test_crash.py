"""The writer killed with SIGKILL while clients write, three times: every item the server
acknowledged is in the store afterwards, and the store reopens healthy each time (the
kernel released the writer lock of the killed process). Again with maintenance after every
other write, so that kills land while a maintenance runs and writes are served beside it
(``actors.storage.beside``)."""

from __future__ import annotations

import random
import signal
import subprocess
from pathlib import Path

import anyio

from ralph_context import Settings
from ralph_context.storage.lance_store import LanceStore
from tests.server_process import owner_client, start_http_server, store_config

# Three kills a test keep CI inside its budget (a cycle is a server start, ~6 s); fifty
# run under load in benchmarks/replicas/kill_loop.sh.
CYCLES = 3


async def _write_then_kill(
    url: str, config: Path, server: subprocess.Popen[bytes], cycle: int, acknowledged: list[str]
) -> None:
    """Store items one call after another; once 15 more are acknowledged, kill the server
    at a random moment of the calls that follow (a call cut off was never acknowledged)."""
    target = len(acknowledged) + 15
    enough = anyio.Event()

    async def write() -> None:
        try:
            async with owner_client(url, config) as client:
                for n in range(10_000):
                    answer = await client.call_tool(
                        "store_context",
                        {
                            "content": f"cycle {cycle} note {n}: the build cache key",
                            "context_type": "output",
                        },
                    )
                    if answer.is_error or answer.structured_content is None:
                        return
                    acknowledged.append(str(answer.structured_content["id"]))
                    if len(acknowledged) >= target:
                        enough.set()
        except Exception:  # the connection died with the server
            return

    async def kill() -> None:
        await enough.wait()
        await anyio.sleep(random.uniform(0, 0.05))
        server.send_signal(signal.SIGKILL)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(write)
            group.start_soon(kill)


async def _health(url: str, config: Path) -> str:
    async with owner_client(url, config) as client:
        answer = await client.call_tool("health_check", {})
        assert answer.structured_content is not None
        return str(answer.structured_content["status"])


def _kill_cycles(config: Path) -> None:
    acknowledged: list[str] = []
    for cycle in range(CYCLES):
        server, url = start_http_server(config)
        try:
            assert anyio.run(_health, url, config) == "healthy"
            anyio.run(_write_then_kill, url, config, server, cycle, acknowledged)
        finally:
            server.stop(kill=True)
        assert server.returncode == -signal.SIGKILL
    settings = Settings.load(config)
    reopened = LanceStore(settings.store_path(), model_id=None, dimension=None)
    try:
        found = [item.id for item in reopened.get_items(acknowledged)]
    finally:
        reopened.close()
    assert len(acknowledged) >= CYCLES * 15
    assert sorted(found) == sorted(acknowledged)  # none lost, none twice


def test_kill_9_during_writes_loses_no_acknowledged_item(tmp_path: Path) -> None:
    _kill_cycles(store_config(tmp_path / "ralph.yaml", tmp_path / "store"))


def test_kill_9_while_maintenance_runs_beside_writes_loses_nothing(tmp_path: Path) -> None:
    config = store_config(tmp_path / "ralph.yaml", tmp_path / "store")
    with config.open("a", encoding="utf-8") as out:
        out.write("      optimize_every_writes: 2\n")
    _kill_cycles(config)
