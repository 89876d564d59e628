"""The embedding actor with the real model: coalescing, caching, faithfulness."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import anyio
import numpy as np
import pytest
from numpy.typing import NDArray

from ralph_context.actors.embedding import EmbeddingActor, EmbedRequest
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import BULK_TEXTS, LocalEmbedder, TextModel
from ralph_context.runtime import Supervisor


class CountingModel(LocalEmbedder):
    def __init__(self, real: LocalEmbedder) -> None:
        super().__init__(real._model, real.model_id, real.dimension)
        self.calls: list[int] = []

    def embed(  # type: ignore[override]
        self,
        texts: list[str],
        batch_size: int,
        *,
        query: bool = False,
        request_size: int | None = None,
    ) -> np.ndarray:
        self.calls.append(len(texts))
        return super().embed(texts, batch_size, query=query, request_size=request_size)


async def test_concurrent_requests_share_batches_and_match_direct_embeddings(
    embedder: LocalEmbedder,
) -> None:
    model = CountingModel(embedder)
    texts = [f"log line {n}: {'disk ' * (n % 5)}full on node {n}" for n in range(40)]
    replies: dict[int, np.ndarray] = {}
    actor = EmbeddingActor(EmbeddingsSettings(batch_size=16), loader=lambda _s: model)
    with anyio.fail_after(30):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)

            async def ask(n: int) -> None:
                replies[n] = (await actor.call(EmbedRequest((texts[n],)), timeout=20))[0]

            async with anyio.create_task_group() as tg:
                for n in range(40):
                    tg.start_soon(ask, n)
    direct = embedder.embed(texts, 16)
    for n in range(40):
        assert np.allclose(replies[n], direct[n], atol=1e-5)
    assert sum(model.calls) == 40
    assert len(model.calls) < 40
    assert max(model.calls) <= 16


async def test_repeated_texts_come_from_the_cache(embedder: LocalEmbedder) -> None:
    model = CountingModel(embedder)
    actor = EmbeddingActor(EmbeddingsSettings(), loader=lambda _s: model)
    with anyio.fail_after(30):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)
            first = await actor.call(EmbedRequest(("same text", "other")), timeout=20)
            second = await actor.call(EmbedRequest(("same text", "same text")), timeout=20)
    assert sum(model.calls) == 2
    assert np.array_equal(first[0], second[0])
    assert np.array_equal(second[0], second[1])
    assert actor.cache_stats["hits"] == 2


async def test_cache_can_be_disabled(embedder: LocalEmbedder) -> None:
    model = CountingModel(embedder)
    actor = EmbeddingActor(EmbeddingsSettings(cache_embeddings=False), loader=lambda _s: model)
    with anyio.fail_after(30):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)
            await actor.call(EmbedRequest(("again",)), timeout=20)
            await actor.call(EmbedRequest(("again",)), timeout=20)
    assert model.calls == [1, 1]


async def test_vectors_are_unit_length_and_semantic(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed(
        ["How do I reset my password?", "Steps to recover a forgotten password", "Tomato soup"],
        8,
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3


class WatchedModel(LocalEmbedder):
    """The real model (both sessions), saying when a bulk call starts."""

    def __init__(self, real: LocalEmbedder) -> None:
        super().__init__(real._model, real.model_id, real.dimension, real._query_model)
        self.bulk_started = threading.Event()

    def embed(  # type: ignore[override]
        self,
        texts: list[str],
        batch_size: int,
        *,
        query: bool = False,
        request_size: int | None = None,
    ) -> np.ndarray:
        if not self.in_query_session(request_size or len(texts), query=query):
            self.bulk_started.set()
        return super().embed(texts, batch_size, query=query, request_size=request_size)


async def test_a_query_is_answered_beside_a_bulk_batch_not_after_it(
    embedder: LocalEmbedder,
) -> None:
    model = WatchedModel(embedder)
    if model._query_model is None:
        pytest.skip("the model has no query session here (one thread)")
    bulk = [f"ingested line {n}: replica lag on shard {n}" for n in range(64)]
    more = [f"queued behind the bulk batch, line {n}" for n in range(8)]
    query = "why does the shard lag?"
    answered: list[str] = []
    replies: dict[str, np.ndarray] = {}
    actor = EmbeddingActor(EmbeddingsSettings(batch_size=8), loader=lambda _s: model)
    with anyio.fail_after(60):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)

            async def ask(name: str, texts: list[str], *, is_query: bool = False) -> None:
                request = EmbedRequest(tuple(texts), query=is_query)
                replies[name] = await actor.call(request, timeout=50)
                answered.append(name)

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask, "bulk", bulk)
                # Until the bulk batch is in the model (a thread event: the model's thread).
                await anyio.to_thread.run_sync(model.bulk_started.wait, 30)
                tg.start_soon(ask, "more", more)
                await ask("query", [query], is_query=True)
    # The query did not wait for the 8 model calls of the bulk request; the documents that
    # queued during its pass were answered after it, in order, each the right vectors.
    assert answered == ["query", "bulk", "more"]
    assert np.allclose(replies["query"][0], embedder.embed([query], 1, query=True)[0], atol=1e-5)
    assert np.allclose(replies["bulk"][-8:], embedder.embed(bulk[-8:], 8), atol=1e-5)
    assert np.allclose(replies["more"], embedder.embed(more, 8), atol=1e-5)


class _Session:
    """One onnxruntime session of the real model, counting the texts of each call."""

    def __init__(self, inner: TextModel) -> None:
        self.inner = inner
        self.calls: list[int] = []

    def embed(self, documents: list[str], batch_size: int) -> Iterable[NDArray[np.generic]]:
        self.calls.append(len(documents))
        return self.inner.embed(documents, batch_size)


async def test_a_requests_small_batches_stay_in_the_bulk_session(embedder: LocalEmbedder) -> None:
    """The plan cuts a request into batches of like token counts, some of a few texts: a
    request of many documents keeps every batch in the bulk session (each small batch in
    the query session cost 13% of ``store_contexts``' rate); a loop's two-text store and a
    query keep the query session."""
    if embedder._query_model is None:
        pytest.skip("the model has no query session here (one thread)")
    bulk, query = _Session(embedder._bulk_model()), _Session(embedder._query_model)
    model = LocalEmbedder(bulk, embedder.model_id, embedder.dimension, query)
    # Lengths from a few words to a few hundred: the plan cannot keep them in even batches.
    texts = [
        f"turn {n}: " + "the deploy waited on the cache " * (1 + (n * 7) % 40) for n in range(48)
    ]
    planned = model.plan(texts, 16)
    assert min(len(batch) for batch in planned) < BULK_TEXTS < len(texts)
    actor = EmbeddingActor(EmbeddingsSettings(batch_size=16), loader=lambda _s: model)
    with anyio.fail_after(60):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)
            vectors = await actor.call(EmbedRequest(tuple(texts)), timeout=50)
            assert sorted(bulk.calls) == sorted(len(batch) for batch in planned)
            assert query.calls == []
            await actor.call(EmbedRequest(("one note", "and another")), timeout=20)
            await actor.call(EmbedRequest(("why did it wait?",), query=True), timeout=20)
    assert query.calls == [2, 1]
    assert np.allclose(vectors, embedder.embed(texts, 16), atol=1e-5)
