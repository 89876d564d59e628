"""Serving a store another process holds is refused with the refusal itself, whatever the
transport: the command line prints it as its one ``error:`` line (``cli_engine.run``). Over
HTTP it was raised inside a task group, which wrapped it in an ExceptionGroup: the command
printed a 280-line traceback instead."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from benchmarks.serving import free_port
from ralph_context.errors import StoreLocked
from ralph_context.server.run import Transport, serve
from tests.helpers import SettingsFactory
from tests.storage.test_writer_lock import _hold


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_serving_a_held_store_raises_the_refusal_naming_the_holder(
    transport: Transport, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings()
    store = settings.store_root()
    assert isinstance(store, Path)
    holder = _hold(store)
    try:
        with anyio.fail_after(60), pytest.raises(StoreLocked) as refused:
            await serve(settings, transport=transport, host="127.0.0.1", port=free_port())
    finally:
        holder.kill()
        holder.communicate()
    assert f"open for writing by process {holder.pid}" in str(refused.value)
