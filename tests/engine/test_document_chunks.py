"""Stored texts are embedded in chunks sized to the model's speed (``engine.documents``):
a slow model gets chunks its deadline holds, so its texts keep their vectors."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

from ralph_context.actors.embedding import EmbedRequest
from ralph_context.embeddings.local import Vectors
from ralph_context.engine.documents import CHUNK_SECONDS, FIRST_CHUNK, MAX_CHUNK, DocumentChunks
from ralph_context.errors import ActorUnavailable
from tests.helpers import SettingsFactory


class Paced:
    """A model taking ``per_text`` seconds a text, refusing requests past their deadline
    as the embedding actor does; it records each request's size."""

    def __init__(self, per_text: float) -> None:
        self.per_text = per_text
        self.sizes: list[int] = []

    async def __call__(self, request: EmbedRequest, deadline: float) -> Vectors:
        self.sizes.append(len(request.texts))
        work = self.per_text * len(request.texts)
        if work > deadline:
            await anyio.sleep(deadline)
            raise ActorUnavailable(f"no answer within {deadline} s")
        await anyio.sleep(work)
        return np.ones((len(request.texts), 4), dtype=np.float32)


async def test_a_slow_models_chunks_shrink_to_what_its_deadline_holds() -> None:
    model = Paced(per_text=0.01)  # 100 texts a second
    chunks = DocumentChunks()
    vectors = await chunks.embed(model, [f"text {i}" for i in range(700)], deadline=5.0)
    assert all(v is not None for v in vectors)
    assert model.sizes[0] == FIRST_CHUNK
    # After the first timed chunk the size follows the speed: ~3 s of work a chunk.
    expected = int(100 * CHUNK_SECONDS)
    assert all(abs(size - min(expected, MAX_CHUNK)) <= 0.2 * expected for size in model.sizes[1:-1])


async def test_a_chunk_past_its_deadline_is_stored_raw_and_the_next_ones_are_smaller() -> None:
    chunks = DocumentChunks()
    chunks.rate = 1000.0  # measured on a fast spell: 256-text chunks
    model = Paced(per_text=0.005)  # now 200 a second: 256 texts take 1.28 s
    vectors = await chunks.embed(model, [f"t{i}" for i in range(400)], deadline=1.0)
    assert model.sizes[0] == MAX_CHUNK
    assert vectors[:MAX_CHUNK] == [None] * MAX_CHUNK  # that chunk missed its deadline
    assert all(v is not None for v in vectors[MAX_CHUNK:])  # the rest fit, smaller
    assert max(model.sizes[1:]) < MAX_CHUNK


@pytest.mark.model
async def test_the_engine_measures_its_model_while_storing(make_settings: SettingsFactory) -> None:
    from ralph_context.arguments import NewItem
    from ralph_context.engine import Engine

    async with Engine(make_settings()) as engine:
        texts = [f"note {i}: the build cache lives in .cache/build-{i}" for i in range(120)]
        items = await engine.store_many([NewItem(text, "skill") for text in texts])
        assert len(items) == 120
        chunks = engine._wiring._chunks
        assert chunks.rate is not None and chunks.size > FIRST_CHUNK
        found = await engine.search("where does the build cache live for note 77?", max_items=3)
        assert any("build-77" in r.item.content for r in found.items)
