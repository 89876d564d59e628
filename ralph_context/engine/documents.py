"""Texts to store, embedded in chunks sized to the model's measured speed.

Each chunk is one request to the embedding actor with its own deadline
(``embeddings.timeout_seconds``), so a large ``store_many`` is not mistaken for a dead
model. A fixed chunk cannot fit every model: 256 texts are ~3 s of MiniLM here but ~20 s of
all-mpnet-base-v2 on an idle 2-core machine, and past the 30 s deadline at a load of 2-3,
when its texts were stored without a vector (found by words only) although the model was
working. So the chunk is what the model embedded in :data:`CHUNK_SECONDS` so far
(starting small, while its speed is unknown), and a deadline holds about ten chunks' work.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from ralph_context._logging import get_logger
from ralph_context.actors.embedding import EmbedRequest
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import ActorUnavailable

__all__ = ["CHUNK_SECONDS", "DocumentChunks"]

log = get_logger("ralph_context.engine")

# Seconds of the model's work a chunk holds, at its speed measured so far.
CHUNK_SECONDS = 3.0
# A first chunk, while the speed is unknown: small enough for the slowest model here.
FIRST_CHUNK = 16
MIN_CHUNK = 4
MAX_CHUNK = 256
# How much of the newest chunk's speed the estimate takes (the rest is the earlier ones').
_NEWEST = 0.5

# One request with its deadline; the reply is a (texts, dimension) matrix.
Embed = Callable[[EmbedRequest, float], Awaitable[Vectors]]


class DocumentChunks:
    """The texts-per-second a model has embedded, and the chunks that follows."""

    def __init__(self) -> None:
        self.rate: float | None = None  # texts a second; None until a chunk was timed

    @property
    def size(self) -> int:
        """Texts in the next chunk."""
        if self.rate is None:
            return FIRST_CHUNK
        return max(MIN_CHUNK, min(MAX_CHUNK, int(self.rate * CHUNK_SECONDS)))

    async def embed(
        self, embed: Embed, texts: Sequence[str], deadline: float
    ) -> list[Vectors | None]:
        """One vector per text, ``None`` for a chunk the model did not embed within
        ``deadline`` seconds (stored raw, found by text); ``embed`` sends one request with
        its deadline."""
        vectors: list[Vectors | None] = [None] * len(texts)
        start = 0
        while start < len(texts):
            chunk = texts[start : start + self.size]
            began = time.monotonic()
            try:
                matrix = await embed(EmbedRequest(tuple(chunk)), deadline)
            except ActorUnavailable as exc:
                log.warning("stored_without_vector", count=len(chunk), reason=str(exc))
                self._timed(len(chunk), deadline)  # at most this fast: smaller chunks next
            else:
                vectors[start : start + len(chunk)] = list(matrix)
                self._timed(len(chunk), time.monotonic() - began)
            start += len(chunk)
        return vectors

    def _timed(self, texts: int, seconds: float) -> None:
        newest = texts / max(seconds, 1e-3)
        self.rate = newest if self.rate is None else _NEWEST * newest + (1 - _NEWEST) * self.rate
