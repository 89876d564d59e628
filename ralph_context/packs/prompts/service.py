"""Prompt learning over the engine: embed outside the store, run table work inside it.

The adapters (MCP tools) validate and shape; this module decides what is searched, what is
written and how the tier degrades: with the embedding model down, retrieval and suggestions
fall back to full-text (BM25) neighbours, and new prompts are stored without a vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from ralph_context.config import PromptLearningSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.engine import Engine
from ralph_context.errors import RalphContextError
from ralph_context.inference.replies import quote
from ralph_context.packs.prompts.analytics import Analytics, Metric, compute
from ralph_context.packs.prompts.rewrite import (
    REWRITE_TEMPERATURE,
    Rewrite,
    check_rewrite,
    rewrite_budget,
    rewrite_messages,
)
from ralph_context.packs.prompts.store import (
    Feedback,
    PromptMatch,
    PromptTables,
    Recorded,
    SessionState,
)
from ralph_context.packs.prompts.suggest import Focus, Similar, Suggestion, suggest
from ralph_context.packs.tables import equals, where
from ralph_context.storage.table.pack_space import PackSpace

__all__ = ["PromptLearning", "Retrieved", "Suggestions", "TimeRange"]

TimeRange = Literal["7d", "30d", "90d", "all"]
_RANGE_DAYS = {"7d": 7, "30d": 30, "90d": 90}
# Neighbours a suggestion is measured on.
SIMILAR_ANALYZED = 20


@dataclass(frozen=True)
class Retrieved:
    matches: list[PromptMatch]
    tier: Literal["semantic", "text"]
    degraded_reason: str | None


@dataclass(frozen=True)
class Suggestions:
    suggestions: list[Suggestion]
    similar: list[Similar]
    tier: Literal["semantic", "text"]


class PromptLearning:
    """The pack's operations on one engine.

    Args:
        engine: The running engine (its store holds the pack's tables).
        settings: The pack's section of ``ralph.yaml``.
        min_similarity: Cosine below which a stored prompt is not "similar" for
            suggestions (the engine's ``retrieval.min_similarity``).
    """

    def __init__(
        self, engine: Engine, settings: PromptLearningSettings, min_similarity: float
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.min_similarity = min_similarity

    async def retrieve(
        self, query: str, *, domain: str | None, top_k: int, min_performance: float
    ) -> Retrieved:
        vector = await self._vector(query)
        matches = await self.engine.in_packs(
            lambda space: PromptTables.of(space).retrieve(
                query, vector, domain=domain, min_performance=min_performance, top_k=top_k
            )
        )
        reason = None if vector is not None else self.engine.semantic_unavailable
        return Retrieved(matches, "semantic" if vector is not None else "text", reason)

    async def record(self, feedback: Feedback) -> Recorded:
        vector = await self._vector(feedback.prompt_text) if feedback.prompt_text else None
        alpha = self.settings.ema_alpha
        return await self.engine.in_packs(
            lambda space: PromptTables.of(space).record(feedback, vector, alpha)
        )

    async def suggest(self, prompt: str, focus: Focus) -> Suggestions:
        vector = await self._vector(prompt)
        matches = await self.engine.in_packs(
            lambda space: PromptTables.of(space).retrieve(
                prompt, vector, domain=None, min_performance=0.0, top_k=SIMILAR_ANALYZED + 1
            )
        )
        gate = self.min_similarity if vector is not None else 0.0
        similar = [
            Similar(match.record.prompt_text, match.record.metrics.success_rate)
            for match in matches
            if match.similarity >= gate and match.record.prompt_text.strip() != prompt.strip()
        ][:SIMILAR_ANALYZED]
        tier: Literal["semantic", "text"] = "semantic" if vector is not None else "text"
        return Suggestions(suggest(prompt, similar, focus), similar, tier)

    async def rewrite(self, prompt: str, suggestions: Sequence[Suggestion]) -> Rewrite | None:
        """``prompt`` rewritten by ``rewrite_model`` to apply ``suggestions``; ``None`` when
        no rewrite model is configured. A model that fails leaves the suggestions standing:
        the failure is reported in the note, never raised."""
        model = self.settings.rewrite_model
        if model is None:
            return None
        if not suggestions:
            return Rewrite(model, None, "no measured suggestion to apply, so no rewrite")
        try:
            completion = await self.engine.inference.complete(
                model,
                rewrite_messages(prompt, suggestions),
                temperature=REWRITE_TEMPERATURE,
                max_tokens=rewrite_budget(prompt),
                timeout_seconds=self.settings.rewrite_timeout_seconds,
            )
        except RalphContextError as error:
            return Rewrite(model, None, f"the rewrite model failed: {error}")
        checked = check_rewrite(completion.text, prompt, suggestions)
        note = None
        if checked is None:
            note = f"the rewrite model returned no new prompt: {quote(completion.text)}"
        elif completion.finish_reason == "length":
            note = "the rewrite model hit its token limit: the rewrite may be cut off"
        return Rewrite(model, checked, note, round(completion.latency_ms, 1))

    async def analytics(
        self, *, domain: str | None, time_range: TimeRange, metrics: Sequence[Metric]
    ) -> Analytics:
        start = None
        if time_range != "all":
            start = datetime.now(UTC) - timedelta(days=_RANGE_DAYS[time_range])

        def read(space: PackSpace) -> Analytics:
            tables = PromptTables.of(space)
            records = tables.records_where(
                where(equals("domain", domain)) if domain is not None else None
            )
            outcomes = tables.outcome_rows(start=start, domain=domain)
            return compute(records, outcomes, start=start, metrics=metrics)

        return await self.engine.in_packs(read)

    async def session(self, session_id: str) -> SessionState:
        return await self.engine.in_packs(lambda space: PromptTables.of(space).session(session_id))

    async def _vector(self, text: str) -> Vectors | None:
        return (await self.engine.embed([text]))[0]
