"""A store that goes quiet gets its space back (``actors.settle``): written one item per
call it ends, once its writes are past the retention window, within 1.5x the size of the
same items written in one batch, with no call asking for it."""

from __future__ import annotations

import time

import anyio
import numpy as np
import pytest

from ralph_context import ContextItem, ContextType, Engine
from ralph_context.embeddings.local import LocalEmbedder
from tests.helpers import Loader, SettingsFactory

pytestmark = pytest.mark.model

COUNT = 300
# Seconds: old versions go 1.2 s after the last change (the default is 5 minutes).
RETENTION_MINUTES = 0.02


def items(embedder: LocalEmbedder) -> list[tuple[ContextItem, np.ndarray]]:
    topics = [f"deploy note {n}: staging needs the VPN and make deploy-{n}" for n in range(20)]
    vectors = embedder.embed(topics, 20)
    return [
        (
            ContextItem(content=f"{topics[n % 20]} (entry {n})", content_type=ContextType.OUTPUT),
            vectors[n % 20],
        )
        for n in range(COUNT)
    ]


async def settled_size(engine: Engine, limit: float, within: float = 60.0) -> int:
    """The store's size once it is at most ``limit`` bytes, or after ``within`` seconds."""
    deadline = time.monotonic() + within
    size = await engine.size_bytes()
    while size > limit and time.monotonic() < deadline:
        await anyio.sleep(0.5)
        size = await engine.size_bytes()
    return size


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_one_by_one_writes_settle_within_1_5x_the_batched_size(
    make_settings: SettingsFactory,
    shared_model: Loader,
    embedder: LocalEmbedder,
) -> None:
    data = items(embedder)
    retention = {"version_retention_minutes": RETENTION_MINUTES}
    batched = make_settings(storage={**retention, "path": str(make_settings().store_path())})
    async with Engine(batched, model_loader=shared_model) as engine:
        await engine.store_embedded(data)
        batch_size = await settled_size(engine, 0, within=6)  # after its own passes
    single = make_settings(storage={**retention, "path": str(make_settings().store_path()) + "1"})
    async with Engine(single, model_loader=shared_model) as engine:
        for pair in data:
            await engine.store_embedded([pair])
        written = await engine.size_bytes()
        assert written > 3 * batch_size  # a version, and its files, per write
        size = await settled_size(engine, 1.5 * batch_size)
    assert size <= 1.5 * batch_size, (size, batch_size, written)
