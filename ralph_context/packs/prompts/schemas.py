"""Arguments and answers of the prompt-learning tools (the spec's contracts, plus a few
fields it lacked: the tier that served a search, whether feedback created a prompt, and the
session it advanced)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ralph_context.models import MAX_COUNT
from ralph_context.packs.prompts.metrics import PromptMetrics
from ralph_context.packs.prompts.rewrite import Rewrite
from ralph_context.packs.prompts.store import PromptMatch, SessionState
from ralph_context.packs.prompts.suggest import Suggestion

__all__ = [
    "AnalyticsAnswer",
    "CurrentPerformance",
    "FeedbackAnswer",
    "MetricsOut",
    "Outcome",
    "RetrieveAnswer",
    "SessionAnswer",
    "SuggestAnswer",
    "UserFeedback",
]

_Unit = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)


class _Strict(BaseModel):
    # Strict: "true" is not a boolean and "0.5" is not a number; the client gets told.
    model_config = ConfigDict(extra="forbid", strict=True)


class Outcome(_Strict):
    """How one execution of the prompt went."""

    success: bool
    latency_ms: float | None = Field(default=None, ge=0.0, le=MAX_COUNT, allow_inf_nan=False)
    output_tokens: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    quality_score: float | None = _Unit


class UserFeedback(_Strict):
    satisfaction: float | None = _Unit
    comments: str | None = Field(default=None, max_length=4_000)


class CurrentPerformance(_Strict):
    success_rate: float | None = _Unit
    avg_latency_ms: float | None = Field(default=None, ge=0.0, le=MAX_COUNT, allow_inf_nan=False)
    token_efficiency: float | None = _Unit


class MetricsOut(BaseModel):
    success_rate: float
    avg_latency_ms: float | None
    token_efficiency: float | None
    observation_count: int

    @classmethod
    def of(cls, metrics: PromptMetrics) -> MetricsOut:
        return cls(
            success_rate=round(metrics.success_rate, 6),
            avg_latency_ms=_round(metrics.avg_latency_ms),
            token_efficiency=_round(metrics.token_efficiency),
            observation_count=metrics.observation_count,
        )


class PromptResult(BaseModel):
    prompt_id: str
    prompt_text: str
    similarity_score: float
    metrics: MetricsOut
    domain: str | None
    task_type: str | None
    tags: list[str]
    created_at: str

    @classmethod
    def of(cls, match: PromptMatch) -> PromptResult:
        record = match.record
        return cls(
            prompt_id=record.id,
            prompt_text=record.prompt_text,
            similarity_score=round(match.similarity, 6),
            metrics=MetricsOut.of(record.metrics),
            domain=record.domain,
            task_type=record.task_type,
            tags=list(record.tags),
            created_at=record.created_at.isoformat(),
        )


class RetrieveAnswer(BaseModel):
    """``retrieve_prompts``: nearest first. ``similarity_score`` is cosine on the semantic
    tier and BM25 relative to the best match on the text tier."""

    results: list[PromptResult]
    tier: Literal["semantic", "text"]
    degraded_reason: str | None


class SessionAnswer(BaseModel):
    session_id: str
    current_prompt_id: str | None
    iteration_count: int
    best_score: float | None
    history: list[dict[str, Any]]
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, session: SessionState) -> SessionAnswer:
        return cls(
            session_id=session.session_id,
            current_prompt_id=session.current_prompt_id,
            iteration_count=session.iteration_count,
            best_score=session.best_score,
            history=list(session.history),
            created_at=session.created_at.isoformat(),
            updated_at=session.updated_at.isoformat(),
        )


class FeedbackAnswer(BaseModel):
    status: Literal["recorded"]
    prompt_id: str
    created: bool
    updated_metrics: MetricsOut
    session: SessionAnswer | None


class SuggestionOut(BaseModel):
    type: str
    description: str
    example: str
    expected_improvement: float
    pattern: str
    focus: str
    similar_with_pattern: int
    similar_without_pattern: int

    @classmethod
    def of(cls, suggestion: Suggestion) -> SuggestionOut:
        return cls(
            type=suggestion.type,
            description=suggestion.description,
            example=suggestion.example,
            expected_improvement=suggestion.expected_improvement,
            pattern=suggestion.pattern,
            focus=suggestion.focus,
            similar_with_pattern=suggestion.prompts_with,
            similar_without_pattern=suggestion.prompts_without,
        )


class BasedOn(BaseModel):
    similar_prompts_analyzed: int
    avg_performance_of_similar: float | None
    current_success_rate: float | None
    gap_to_similar: float | None


class RewriteOut(BaseModel):
    """The prompt rewritten by ``packs.prompt_learning.rewrite_model`` to apply the
    suggestions; ``applied`` / ``not_applied`` list suggestion types, as checked on the
    rewrite by the same pattern detectors (not as the model claims)."""

    model: str
    prompt: str | None
    applied: list[str]
    not_applied: list[str]
    latency_ms: float | None
    note: str | None

    @classmethod
    def of(cls, rewrite: Rewrite) -> RewriteOut:
        checked = rewrite.checked
        return cls(
            model=rewrite.model,
            prompt=checked.prompt if checked else None,
            applied=list(checked.applied) if checked else [],
            not_applied=list(checked.not_applied) if checked else [],
            latency_ms=rewrite.latency_ms,
            note=rewrite.note,
        )


class SuggestAnswer(BaseModel):
    suggestions: list[SuggestionOut]
    based_on: BasedOn
    tier: Literal["semantic", "text"]
    note: str | None
    # Only with packs.prompt_learning.rewrite_model set.
    rewrite: RewriteOut | None = None


class AnalyticsSummary(BaseModel):
    total_prompts: int
    avg_success_rate: float | None
    improvement_trend: float
    outcomes: int
    averages: dict[str, float | None]


class AnalyticsAnswer(BaseModel):
    """``get_analytics``; ``improvement_trend`` is the least-squares slope of observed
    success per day over the range."""

    summary: AnalyticsSummary
    by_domain: dict[str, dict[str, float | int | None]]
    top_patterns: list[dict[str, float | int | str]]
    time_range: str


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
