"""Embedding actor: turns texts into vectors with the local model, in a worker thread.

Concurrent requests are coalesced: one pass takes every queued request, looks each text up in
the content-hash cache, and embeds the rest in batches of at most ``batch_size`` planned on
their token counts (see ``embeddings/batching.py``: a batch is padded to its longest text).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import anyio
import numpy as np
import structlog

from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder, Vectors, load_embedder
from ralph_context.errors import ModelError
from ralph_context.runtime import Actor, Envelope, PermanentFailure

__all__ = ["EmbedRequest", "EmbeddingActor"]

log = structlog.get_logger("ralph_context.embedding")

# Up to this many texts are planned on the event loop (well under a millisecond).
_PLAN_INLINE = 8


@dataclass(frozen=True)
class EmbedRequest:
    """Texts to embed; the reply is a ``(len(texts), dimension)`` float32 matrix.

    ``query`` marks retrieval queries: they go to the model's query session (see
    ``LocalEmbedder``), also when several arrive at once from concurrent clients.
    """

    texts: tuple[str, ...]
    query: bool = False


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class _LruCache:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._rows: OrderedDict[bytes, Vectors] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: bytes) -> Vectors | None:
        row = self._rows.get(key)
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        self._rows.move_to_end(key)
        return row

    def put(self, key: bytes, row: Vectors) -> None:
        if self.capacity <= 0:
            return
        self._rows[key] = row
        self._rows.move_to_end(key)
        while len(self._rows) > self.capacity:
            self._rows.popitem(last=False)

    def __len__(self) -> int:
        return len(self._rows)


class EmbeddingActor(Actor[EmbedRequest, Vectors]):
    """Owns the model; a missing model marks it ``down`` at once (nothing to retry).

    Args:
        settings: The ``embeddings`` section.
        loader: Builds the model; tests pass one that fails to simulate a broken model.
    """

    def __init__(
        self,
        settings: EmbeddingsSettings,
        *,
        loader: Callable[[EmbeddingsSettings], LocalEmbedder] = load_embedder,
    ) -> None:
        super().__init__("embedding", inbox_size=256, max_batch=64)
        self.settings = settings
        self._loader = loader
        self._embedder: LocalEmbedder | None = None
        self._cache = _LruCache(settings.cache_size if settings.cache_embeddings else 0)
        # One ONNX session; onnxruntime already uses every core inside a call.
        self._limiter = anyio.CapacityLimiter(1)

    @property
    def model_id(self) -> str | None:
        """Id of the loaded model, ``None`` before it loads or if it cannot."""
        return self._embedder.model_id if self._embedder else None

    @property
    def dimension(self) -> int | None:
        """Vector size of the loaded model."""
        return self._embedder.dimension if self._embedder else None

    @property
    def cache_stats(self) -> dict[str, int]:
        """Hits, misses and entries of the content-hash cache."""
        return {"hits": self._cache.hits, "misses": self._cache.misses, "size": len(self._cache)}

    async def setup(self) -> None:
        if self._embedder is not None:
            return
        try:
            self._embedder = await anyio.to_thread.run_sync(self._loader, self.settings)
        except ModelError as exc:
            raise PermanentFailure(str(exc)) from exc
        log.info(
            "embedding_model_loaded",
            model=self._embedder.model_id,
            dimension=self._embedder.dimension,
        )

    async def handle(self, request: EmbedRequest) -> Vectors:
        return await self._embed(list(request.texts), query=request.query)

    async def handle_batch(self, batch: Sequence[Envelope[EmbedRequest, Vectors]]) -> None:
        """Queries first (a loop waits on them), then documents, each kind in one pass."""
        for query in (True, False):
            group = [e for e in batch if e.request.query is query]
            if not group:
                continue
            texts = [text for envelope in group for text in envelope.request.texts]
            matrix = await self._embed(texts, query=query)
            start = 0
            for envelope in group:
                count = len(envelope.request.texts)
                envelope.resolve(matrix[start : start + count])
                start += count

    async def _embed(self, texts: list[str], *, query: bool) -> Vectors:
        embedder = self._embedder
        assert embedder is not None, "setup() loads the model before any request"
        out = np.empty((len(texts), embedder.dimension), dtype=np.float32)
        pending: dict[bytes, list[int]] = {}
        for position, text in enumerate(texts):
            key = _key(text)
            cached = self._cache.get(key)
            if cached is not None:
                out[position] = cached
            else:
                pending.setdefault(key, []).append(position)
        if pending:
            unique = list(pending.items())
            firsts = [texts[positions[0]] for _key, positions in unique]
            plan = partial(embedder.plan, firsts, self.settings.batch_size)
            # Tokenizing to plan takes ~0.06 ms a text: a few inline, more in a thread.
            if len(firsts) <= _PLAN_INLINE:
                batches = plan()
            else:
                batches = await anyio.to_thread.run_sync(plan)
            for batch in batches:
                work = partial(embedder.embed, [firsts[i] for i in batch], len(batch), query=query)
                vectors = await anyio.to_thread.run_sync(work, limiter=self._limiter)
                for i, row in zip(batch, vectors, strict=True):
                    key, positions = unique[i]
                    out[positions] = row
                    self._cache.put(key, row)
        return out
