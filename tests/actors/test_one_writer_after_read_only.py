"""A store opened while its disk refused the writer lock's file (read-only, immutable) takes
the lock before it writes once the disk takes writes again, or stays read-only until
restart when another process took it meanwhile: never two writers. The real engine on the
real LanceDB store on a small tmpfs (root only, as in CI: see ``tests/disk_faults.py``),
and other processes for the second writer."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import lancedb
import pytest

from ralph_context import Engine, StoreError, StoreUnwritable
from ralph_context.actors.storage.unwritable import READ_ONLY
from ralph_context.storage.table import threads
from ralph_context.storage.table.schema import ITEMS
from ralph_context.storage.writer_lock import LOCK_FILE
from tests.disk_faults import immutable
from tests.helpers import Loader, SettingsFactory
from tests.server_process import run_cli, store_config

NOTES = (
    "The deploy script restarts the payment service after the database migration.",
    "Grandma's tomato soup needs basil, garlic and two hours on a low flame.",
)
# Writes resume at the next probe (at most 10 s apart): room for a loaded machine.
RESUME_WITHIN = 30
# A process holding the store's writer lock until its stdin closes.
HOLD_LOCK = (
    "import sys; from pathlib import Path; from ralph_context.storage import writer_lock; "
    "writer_lock.acquire(Path(sys.argv[1])); print('held', flush=True); sys.stdin.read()"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextmanager
def _holding_the_lock(store: Path) -> Iterator[None]:
    """Another process holding ``store``'s writer lock: the lock file alone is made
    writable, so it takes the lock while the folder still refuses this one's probes."""
    subprocess.run(["chattr", "-i", str(store / LOCK_FILE)], check=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        # Its log (the note it could not write) comes first.
        assert "held\n" in iter(holder.stdout.readline, "")
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()


def _sequences(store: Path) -> list[int]:
    table = lancedb.connect(str(store)).open_table(ITEMS)
    return [int(s) for s in table.to_arrow().column(threads.SEQUENCE).to_pylist()]


async def test_a_store_opened_read_only_takes_the_lock_before_it_writes_again(
    disk: Path, make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    settings = make_settings(storage={"path": str(disk / "store")})
    store = settings.store_path()
    assert isinstance(store, Path)
    config = store_config(tmp_path / "ralph.yaml", store)
    with anyio.fail_after(240):
        async with Engine(settings, model_loader=shared_model) as engine:
            await engine.store(NOTES[0], "output")
        make_writable = immutable(store)
        async with Engine(settings, model_loader=shared_model) as engine:
            assert engine.health().state("storage") == f"degraded: {READ_ONLY}"
            with pytest.raises(StoreUnwritable, match="store is not writable"):
                await engine.store(NOTES[1], "output")
            make_writable()
            storage = engine.supervisor.actors["storage"]
            with anyio.fail_after(RESUME_WITHIN):
                await storage.health.wait_until(lambda health: health.degraded is None)
            await engine.store(NOTES[1], "output")
            # The lock is this process's now: a CLI is refused, naming it.
            second = await anyio.to_thread.run_sync(
                lambda: run_cli(config, "store", "A second writer's note.", "--type", "output")
            )
            assert second.returncode != 0
            assert "is open for writing by process" in second.stderr
            assert (await engine.search(NOTES[1], max_items=1)).items[0].item.content == NOTES[1]
    sequences = _sequences(store)
    assert len(sequences) == 2 and len(set(sequences)) == 2


async def test_a_store_whose_lock_another_process_took_meanwhile_stays_read_only(
    disk: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(storage={"path": str(disk / "store")})
    store = settings.store_path()
    assert isinstance(store, Path)
    with anyio.fail_after(240):
        async with Engine(settings, model_loader=shared_model) as engine:
            stored = await engine.store(NOTES[0], "output")
        make_writable = immutable(store)
        async with Engine(settings, model_loader=shared_model) as engine:
            assert engine.health().state("storage") == f"degraded: {READ_ONLY}"
            with _holding_the_lock(store):
                make_writable()
                storage = engine.supervisor.actors["storage"]
                with anyio.fail_after(RESUME_WITHIN):
                    await storage.health.wait_until(
                        lambda _health: "until it restarts" in (engine.health().write_error or "")
                    )
                # (The holder could not write its note in the immutable folder: unnamed.)
                with pytest.raises(StoreError, match=r"open for writing by .* until it restarts"):
                    await engine.store(NOTES[1], "output")
                assert engine.health().state("storage") == f"degraded: {READ_ONLY}"
                found = await engine.search(NOTES[0], max_items=1)
                assert found.items[0].item.id == stored.id
    assert len(_sequences(store)) == 1
