"""One writing process per store: the lock between processes, the holder's note, and what a
second process is told."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ralph_context.actors.storage.actor import AddItems, StorageActor
from ralph_context.config import StorageSettings
from ralph_context.errors import StoreError, StoreLocked
from ralph_context.runtime.supervisor import Supervisor
from ralph_context.storage import writer_lock
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.table.filters import ItemFilter
from tests.helpers import unit
from tests.storage.test_lance_store import item

_HOLD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from ralph_context.storage import writer_lock
    location = Path(sys.argv[1])
    writer_lock.acquire(location)
    if len(sys.argv) > 2:
        writer_lock.advertise(location, sys.argv[2])
    print("held", flush=True)
    sys.stdin.read()
    """
)

_WRITE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from ralph_context.models import ContextItem, ContextType
    from ralph_context.storage.lance_store import LanceStore
    store = LanceStore(Path(sys.argv[1]), model_id="m", dimension=4)
    print("held", flush=True)
    for line in sys.stdin:
        vector = np.array([1, 0, 0, 0], dtype=np.float32)
        item = ContextItem(content=line.strip(), content_type=ContextType.OUTPUT)
        store.add_items([(item, vector)])
        print("written", flush=True)
    """
)

_TRY = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from ralph_context.errors import StoreLocked
    from ralph_context.storage import writer_lock
    try:
        writer_lock.acquire(Path(sys.argv[1]))
    except StoreLocked as refused:
        print("refused:", refused)
    else:
        print("acquired")
    """
)


def _hold(
    location: Path, endpoint: str | None = None, script: str = _HOLD
) -> subprocess.Popen[str]:
    """Another process holding the store's writer lock (until its stdin closes)."""
    arguments = [sys.executable, "-c", script, str(location), *([endpoint] if endpoint else [])]
    process = subprocess.Popen(arguments, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    return process


def _another_process_tries(location: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _TRY, str(location)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_a_second_process_is_refused_with_the_holders_pid_and_endpoint(tmp_path: Path) -> None:
    endpoint = "http://127.0.0.1:8765/mcp"
    holder = _hold(tmp_path, endpoint)
    try:
        with pytest.raises(StoreLocked) as refused:
            LanceStore(tmp_path, model_id="m", dimension=4)
        message = str(refused.value)
        assert f"process {holder.pid}" in message
        assert endpoint in message
        note = writer_lock.holder(tmp_path)
        assert note is not None
        assert (note.pid, note.endpoint) == (holder.pid, endpoint)
        # Refused before anything was written: no table was created.
        assert not (tmp_path / "context_items.lance").exists()
    finally:
        holder.kill()
        holder.communicate()


def test_a_killed_writer_leaves_no_lock_behind(tmp_path: Path) -> None:
    holder = _hold(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.communicate()
    assert writer_lock.holder(tmp_path) is None
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    try:
        store.add_items([(item("written after the old writer died"), unit(1, 0, 0, 0))])
        assert writer_lock.holder(tmp_path) is not None
    finally:
        store.close()
    assert writer_lock.holder(tmp_path) is None


def test_one_process_shares_its_lock_and_the_last_close_frees_the_store(tmp_path: Path) -> None:
    """A restarted storage actor reopens the store in the same process: that is the same
    writer to everyone else, and the store is free only once both have closed it."""
    first = LanceStore(tmp_path, model_id="m", dimension=4)
    second = LanceStore(tmp_path, model_id="m", dimension=4)
    first.close()
    first.close()  # closing twice gives up one use, not two
    assert _another_process_tries(tmp_path).startswith("refused:")
    second.close()
    assert _another_process_tries(tmp_path) == "acquired"


def test_a_read_only_open_reads_beside_the_writer_and_sees_its_commits(tmp_path: Path) -> None:
    writer = _hold(tmp_path, script=_WRITE)
    assert writer.stdin is not None and writer.stdout is not None
    try:
        writer.stdin.write("written before the reader opened\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "written"
        reader = LanceStore(tmp_path, model_id="m", dimension=4, read_only=True)
        assert writer_lock.holder(tmp_path) is not None  # the reader took nothing
        writer.stdin.write("written while the reader was open\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "written"
        seen = {i.content for i in reader.list_items(ItemFilter(), 10)}
        assert seen == {"written before the reader opened", "written while the reader was open"}
        reader.close()  # releases nothing: the writer still holds the store
        assert _another_process_tries(tmp_path).startswith("refused:")
    finally:
        writer.kill()
        writer.communicate()


def test_a_read_only_open_never_creates_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="read-only open never creates"):
        LanceStore(tmp_path / "nothing-here", model_id="m", dimension=4, read_only=True)
    assert not (tmp_path / "nothing-here" / "context_items.lance").exists()


async def test_a_read_only_storage_actor_refuses_writes(tmp_path: Path) -> None:
    first = LanceStore(tmp_path, model_id="m", dimension=4)
    first.add_items([(item("stored by the writer"), unit(1, 0, 0, 0))])
    first.close()
    actor = StorageActor(StorageSettings(), tmp_path, ("m", 4), read_only=True)
    async with Supervisor() as supervisor:
        await supervisor.start(actor)
        assert [i.content for i in await actor.list_items(ItemFilter(), 5)] == [
            "stored by the writer"
        ]
        with pytest.raises(StoreError, match="open read-only"):
            await actor.call(AddItems(((item("refused"), unit(0, 1, 0, 0)),)), timeout=30)
    assert writer_lock.holder(tmp_path) is None
