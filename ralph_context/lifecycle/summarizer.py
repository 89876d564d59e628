"""One lifecycle pass's summary writer: the configured model first, extractive after it.

A pass may summarize dozens of items, so the model's failures are handled per pass, not per
item. The first failure that would repeat (the model not served, the server unreachable or
failing, a timeout) stops asking the model for the rest of the pass: waiting out the same
60-second timeout on every item would hold the lifecycle up for an hour. A failure that
belongs to one item (the server refusing that request with 400/413/422, say for a context
window it overflows, or a reply that is unusable: empty, longer than the item) only sends that
item to the extractive summary. With no language model server configured at all, the model
is not asked and the report says why. The model also gets a time budget per pass
(``lifecycle.summarizer_budget_seconds``); once it is spent the remaining items are summarized
extractively, so one pass never waits on the model for longer than that.

The tally says which writer wrote how many summaries and why the model was passed over; it
becomes the lifecycle report's ``summarizer`` and ``notes``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import anyio
import numpy as np

from ralph_context._logging import get_logger
from ralph_context.actors.embedding import EmbeddingActor, EmbedRequest
from ralph_context.actors.inference import InferenceActor
from ralph_context.config import LifecycleSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import (
    ActorUnavailable,
    InferenceServerError,
    InferenceTimeout,
    RalphContextError,
)
from ralph_context.lifecycle.abstractive import (
    SUMMARY_MAX_TOKENS,
    SUMMARY_TEMPERATURE,
    read_summary,
    summary_messages,
)
from ralph_context.lifecycle.summarize import pick_central, sentences
from ralph_context.models import ContextItem

__all__ = ["EXTRACTIVE", "LEAD_SENTENCES", "NO_SUMMARY", "PassSummarizer"]

log = get_logger("ralph_context.lifecycle")

EXTRACTIVE = "extractive"
LEAD_SENTENCES = "lead sentences (embedding model unavailable)"
NO_SUMMARY = "none"
# Statuses that refuse one request (too long for the model's context, malformed for it), not
# the model: the next item may well go through.
_REQUEST_REFUSED = frozenset({400, 413, 422})
# Sentences embedded per request of an extractive summary (see PassSummarizer._embed).
_SENTENCES_PER_REQUEST = 4


@dataclass
class _Tally:
    written: Counter[str] = field(default_factory=Counter)
    unusable_replies: int = 0
    refused_items: int = 0
    model_stopped: str | None = None


class PassSummarizer:
    """Writes the summaries of one lifecycle pass.

    Args:
        settings: ``lifecycle`` (the model, its per-summary timeout and per-pass budget).
        embedding: For extractive summaries.
        inference: The language model actor; ``None``, an actor with no server configured,
            or no ``summarizer_model`` mean extractive summaries only.
        embed_timeout: Bound on one item's sentence embedding.
    """

    def __init__(
        self,
        settings: LifecycleSettings,
        *,
        embedding: EmbeddingActor,
        inference: InferenceActor | None,
        embed_timeout: float,
    ) -> None:
        wanted = settings.summarizer_model
        usable = inference is not None and inference.configured
        self.model = wanted if usable else None
        self.settings = settings
        self.embedding = embedding
        self.inference = inference
        self.embed_timeout = embed_timeout
        self._unconfigured = wanted is not None and not usable
        self._deadline: float | None = None
        self._tally = _Tally()

    async def summary(self, item: ContextItem) -> str:
        """``item``'s summary: the model's when it gives a usable one, else extractive."""
        written = await self._by_model(item)
        if written is not None:
            self._tally.written[f"model {self.model}"] += 1
            return written
        parts = sentences(item.content)
        vectors = await self._embed(parts)
        self._tally.written[EXTRACTIVE if vectors is not None else LEAD_SENTENCES] += 1
        return pick_central(parts, vectors)

    @property
    def intended(self) -> str:
        """Who would write this pass's summaries (for dry runs)."""
        return f"model {self.model}" if self.model else EXTRACTIVE

    @property
    def name(self) -> str:
        """Who wrote this pass's summaries, e.g. ``model qwen3 (4), extractive (1)``;
        ``none`` when no item was long enough to need one."""
        written = self._tally.written
        if not written:
            return NO_SUMMARY
        if len(written) == 1:
            return next(iter(written))
        # The model first, then the fallbacks, whatever the counts: reports stay comparable.
        order = sorted(written, key=lambda writer: (not writer.startswith("model "), writer))
        return ", ".join(f"{writer} ({written[writer]})" for writer in order)

    @property
    def notes(self) -> tuple[str, ...]:
        """Why the model did not write some summaries, for the report."""
        tally = self._tally
        notes = []
        if self._unconfigured:
            notes.append(
                f"summarizer_model {self.settings.summarizer_model!r} is set but no language "
                "model server is configured (inference.servers, or LMSTUDIO_SERVERS, "
                "OLLAMA_HOST, TOGETHER_API_KEY, HF_TOKEN); summaries are extractive"
            )
        if tally.model_stopped is not None:
            notes.append(
                f"summarizer_model {self.model!r} was not asked for the rest of this pass "
                f"({tally.model_stopped}); those items got extractive summaries"
            )
        if tally.refused_items:
            notes.append(
                f"the server refused {tally.refused_items} item(s) (see the log); they got "
                "extractive summaries"
            )
        if tally.unusable_replies:
            notes.append(
                f"{tally.unusable_replies} model summaries were unusable (empty, cut off, or "
                "not shorter than the item) and were written extractively"
            )
        return tuple(notes)

    async def _by_model(self, item: ContextItem) -> str | None:
        if self.model is None or self.inference is None or self._tally.model_stopped is not None:
            return None
        now = anyio.current_time()
        if self._deadline is None:
            self._deadline = now + self.settings.summarizer_budget_seconds
        remaining = self._deadline - now
        budget = f"summarizer_budget_seconds ({self.settings.summarizer_budget_seconds:g}s) spent"
        if remaining <= 0:
            self._stop(budget)
            return None
        limit = min(self.settings.summarizer_timeout_seconds, remaining)
        try:
            completion = await self.inference.complete(
                self.model,
                summary_messages(item.content, item.content_type.value),
                temperature=SUMMARY_TEMPERATURE,
                max_tokens=SUMMARY_MAX_TOKENS,
                timeout_seconds=limit,
            )
        except InferenceTimeout as error:
            self._stop(budget if limit < self.settings.summarizer_timeout_seconds else str(error))
            return None
        except InferenceServerError as error:
            if error.status not in _REQUEST_REFUSED:
                self._stop(str(error))
                return None
            self._tally.refused_items += 1
            log.info("model_summary_refused", item=item.id, model=self.model, error=str(error))
            return None
        except RalphContextError as error:
            self._stop(str(error))
            return None
        summary = read_summary(
            completion.text, item.content, cut_off=completion.finish_reason == "length"
        )
        if summary is None:
            self._tally.unusable_replies += 1
            log.info("model_summary_unusable", item=item.id, model=self.model)
        return summary

    def _stop(self, reason: str) -> None:
        self._tally.model_stopped = reason
        log.warning("summarizer_model_unavailable", model=self.model, reason=reason)

    async def _embed(self, parts: list[str]) -> Vectors | None:
        """The sentences' vectors, a few per request: a loop's own embedding (its query,
        the result it stores) waits at most for one of these (~10-20 ms), not for a long
        item's every sentence (seen: 75-95 ms, a loop's store past 100 ms at 100k)."""
        chunks = []
        try:
            for start in range(0, len(parts), _SENTENCES_PER_REQUEST):
                chunk = tuple(parts[start : start + _SENTENCES_PER_REQUEST])
                chunks.append(
                    await self.embedding.call(EmbedRequest(chunk), timeout=self.embed_timeout)
                )
        except ActorUnavailable:
            return None
        return np.concatenate(chunks) if chunks else None
