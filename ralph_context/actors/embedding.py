"""Embedding actor: turns texts into vectors with the local model, in a worker thread.

Concurrent requests are coalesced: one pass takes every queued request, looks each text up in
the content-hash cache, and embeds the rest in batches of at most ``batch_size`` planned on
their token counts (see ``embeddings/batching.py``: a batch is padded to its longest text).

Queries have a lane of their own: a loop waits on each, while a bulk ingest sends 256
documents a request, and several clients ingesting at once queue thousands (one query
waited 11.8 s behind them). While a document batch runs, the queries that arrive are
embedded at once beside it, in the model's query session (a session of its own, so the two
run together), and the documents that arrive wait for the pass under way to end.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import anyio
import numpy as np

from ralph_context._logging import get_logger
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder, Vectors, load_embedder
from ralph_context.errors import ModelError
from ralph_context.runtime import Actor, Envelope, PermanentFailure
from ralph_context.runtime.beside import serve_beside

__all__ = ["EmbedRequest", "EmbeddingActor"]

log = get_logger("ralph_context.embedding")

# Up to this many texts are planned on the event loop (well under a millisecond).
_PLAN_INLINE = 8
# How often the inbox is looked at for queries while a document batch runs (seconds).
_POLL = 0.002


@dataclass(frozen=True)
class EmbedRequest:
    """Texts to embed; the reply is a ``(len(texts), dimension)`` float32 matrix.

    ``query`` marks retrieval queries: they go to the model's query session (see
    ``LocalEmbedder``), also when several arrive at once from concurrent clients.
    """

    texts: tuple[str, ...]
    query: bool = False


Batch = Sequence[Envelope[EmbedRequest, Vectors]]


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
        # One call per ONNX session at a time (onnxruntime already uses every core inside
        # a call): the bulk session's and the query session's (see LocalEmbedder).
        self._limiter = anyio.CapacityLimiter(1)
        self._query_limiter = anyio.CapacityLimiter(1)

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

    async def handle_batch(self, batch: Batch) -> None:
        """Queries first (a loop waits on them), then documents, each kind in one pass;
        queries that arrive during the documents' pass are answered beside it, documents
        after it (see the module's docstring)."""
        later: list[Envelope[EmbedRequest, Vectors]] = []  # documents queued meanwhile
        try:
            await self._answer_kind(batch, query=True)
            await self._answer_kind(batch, query=False, later=later)
            done = 0
            while done < len(later):
                start, done = done, len(later)
                await self._answer_kind(later[start:done], query=False, later=later)
        finally:
            for envelope in later:
                envelope.abandon()  # unanswered after a crash: its caller fails fast

    async def _answer_kind(
        self,
        batch: Batch,
        *,
        query: bool,
        later: list[Envelope[EmbedRequest, Vectors]] | None = None,
    ) -> None:
        """Answer the queries (or the documents) of ``batch`` in one pass."""
        group = [e for e in batch if e.request.query is query]
        if not group:
            return
        texts = [text for envelope in group for text in envelope.request.texts]
        matrix = await self._embed(texts, query=query, later=later)
        start = 0
        for envelope in group:
            count = len(envelope.request.texts)
            envelope.resolve(matrix[start : start + count])
            start += count

    async def _embed(
        self,
        texts: list[str],
        *,
        query: bool,
        later: list[Envelope[EmbedRequest, Vectors]] | None = None,
    ) -> Vectors:
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
                batch_texts = [firsts[i] for i in batch]
                vectors = await self._model(
                    batch_texts, query=query, later=later, request_size=len(firsts)
                )
                for i, row in zip(batch, vectors, strict=True):
                    key, positions = unique[i]
                    out[positions] = row
                    self._cache.put(key, row)
        return out

    async def _model(
        self,
        texts: list[str],
        *,
        query: bool,
        later: list[Envelope[EmbedRequest, Vectors]] | None,
        request_size: int,
    ) -> Vectors:
        """One model call on ``texts`` (a batch of a request of ``request_size`` texts,
        which chooses the session), in a worker thread, one at a time per session. With
        ``later`` (a documents' pass), queries that arrive meanwhile are answered beside it
        and documents go to ``later``."""
        embedder = self._embedder
        assert embedder is not None, "setup() loads the model before any request"
        in_query_session = embedder.in_query_session(request_size, query=query)
        limiter = self._query_limiter if in_query_session else self._limiter
        work = partial(embedder.embed, texts, len(texts), query=query, request_size=request_size)

        async def call() -> Vectors:
            return await anyio.to_thread.run_sync(work, limiter=limiter)

        if later is None:
            return await call()
        return await serve_beside(
            call,
            take=self.take_queued,
            at_once=lambda envelope: envelope.request.query,
            serve=lambda queries: self._answer_kind(queries, query=True),
            keep=later.append,
            poll=_POLL,
        )
