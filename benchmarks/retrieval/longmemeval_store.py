"""One LongMemEval question's haystack in a fresh store, filled as a loop fills it.

Each session (in date order) is an iteration: its turns stored with one
``Engine.store_many`` (one item per turn, ``source`` = the session id, so a session's turns
are one thread for the neighbour evidence), then its result recorded, which queues a
lifecycle pass at the defaults; at the end the last pass runs and the store is compacted
(as the LoCoMo bench's ``run.ingest``). A turn is stored as ``"{role}: {content}"``: whoever
reads the item (an agent, the console) sees who said it, as LoCoMo's items carry their
speaker. No turn of LongMemEval-S comes near ``storage.max_content_bytes`` (100,000; the
longest is ~42 kB); one that did would be cut at the limit, marked ``[truncated]`` and
counted in the results rather than refused.

``benchmarks/retrieval/pools.py`` fills stores the same way for the weight fit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.retrieval.longmemeval import Question, Turn
from benchmarks.settings import store_settings
from ralph_context import ContextType, Engine, IterationResult, NewItem, Settings
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder, Vectors

__all__ = [
    "TRUNCATED",
    "FilledStore",
    "RecordingEmbedder",
    "fill_store",
    "open_engine",
    "stored_text",
]

TRUNCATED = " [truncated]"


class RecordingEmbedder(LocalEmbedder):
    """The loaded model, remembering every document vector the engine asks it for, so the
    cosine baseline reuses them instead of embedding ~500 long turns per question again
    (on two shared cores that is most of a question's time).

    It shares the loaded model's sessions (nothing is loaded twice); only ``embed`` is
    wrapped, so batching and the query/bulk split are the engine's own.
    """

    def __init__(self, inner: LocalEmbedder) -> None:
        # Not super().__init__: it would need the inner sessions by their private names.
        self.__dict__.update(vars(inner))
        self.documents: dict[str, Vectors] = {}

    def embed(
        self,
        texts: Sequence[str],
        batch_size: int,
        *,
        query: bool = False,
        request_size: int | None = None,
    ) -> Vectors:
        matrix = super().embed(texts, batch_size, query=query, request_size=request_size)
        if not query:
            self.documents.update(zip(texts, matrix, strict=True))
        return matrix


def stored_text(turn: Turn, max_bytes: int) -> tuple[str, bool]:
    """What is stored for ``turn`` and whether it had to be cut to ``max_bytes``."""
    text = f"{turn.role}: {turn.content}"
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text, False
    room = max_bytes - len(TRUNCATED.encode("utf-8"))
    return encoded[:room].decode("utf-8", errors="ignore") + TRUNCATED, True


@dataclass(frozen=True)
class FilledStore:
    """A filled store: its settings, which turn each item is, and what filling cost."""

    settings: Settings
    turns: dict[str, Turn]  # item id -> turn
    seconds: float
    truncated: int


def open_engine(settings: Settings, model: LocalEmbedder) -> Engine:
    """An engine on a filled store using the already loaded ``model``."""

    def loader(_: EmbeddingsSettings) -> LocalEmbedder:
        return model

    return Engine(settings, model_loader=loader)


async def fill_store(question: Question, store: Path, model: LocalEmbedder) -> FilledStore:
    """Ingest ``question``'s haystack into a new store at ``store`` and close it."""
    # Default settings (lifecycle included); only the skillbook file is not looked for.
    settings = store_settings(store, skillbook={"enabled": False})
    turns: dict[str, Turn] = {}
    truncated = 0
    async with open_engine(settings, model) as engine:
        limit = engine.settings.storage.max_content_bytes
        started = time.perf_counter()
        for session in question.sessions:
            entries: list[NewItem] = []
            for turn in session.turns:
                text, cut = stored_text(turn, limit)
                truncated += cut
                entries.append(
                    NewItem(
                        text,
                        ContextType.ITERATION,
                        metadata={
                            "session_id": turn.session_id,
                            "session": turn.session,
                            "turn": turn.index,
                            "role": turn.role,
                            "has_answer": turn.has_answer,
                            "date": session.date,
                        },
                        source=turn.session_id,
                        iteration=session.number,
                    )
                )
            stored = await engine.store_many(entries)
            turns.update((item.id, turn) for item, turn in zip(stored, session.turns, strict=True))
            await engine.record_iteration(
                IterationResult(
                    iteration=session.number,
                    success=True,
                    summary=f"session {session.session_id} of {session.date}: "
                    f"{len(session.turns)} turns",
                )
            )
        await engine.run_lifecycle()
        await engine.maintain()
        seconds = time.perf_counter() - started
    return FilledStore(settings, turns, seconds, truncated)
