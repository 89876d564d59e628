"""The prompt-learning tools: retrieve_prompts, record_feedback, suggest_improvements,
get_analytics, and get_prompt_session (the spec's Redis session state, kept in the store).

No ``from __future__ import annotations``: the SDK reads each tool's signature.
"""

from statistics import fmean
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from ralph_context.errors import InvalidInput
from ralph_context.packs.prompts.analytics import Metric
from ralph_context.packs.prompts.metrics import Observation
from ralph_context.packs.prompts.schemas import (
    AnalyticsAnswer,
    AnalyticsSummary,
    BasedOn,
    CurrentPerformance,
    FeedbackAnswer,
    MetricsOut,
    Outcome,
    PromptResult,
    RetrieveAnswer,
    RewriteOut,
    SessionAnswer,
    SuggestAnswer,
    SuggestionOut,
    UserFeedback,
)
from ralph_context.packs.prompts.service import PromptLearning, TimeRange
from ralph_context.packs.prompts.store import Feedback
from ralph_context.packs.prompts.suggest import Focus
from ralph_context.packs.toolkit import READ, WRITE, EngineHolder
from ralph_context.validation import MAX_TAGS, check_tags

__all__ = ["register_prompt_learning"]

NEW = "new"
MAX_TOP_K = 50
Text = Annotated[str, Field(min_length=1, max_length=20_000)]
Label = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")]
Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


def register_prompt_learning(server: MCPServer, holder: EngineHolder) -> None:
    """Register the pack's tools on ``server``."""
    settings = holder.settings

    def pack() -> PromptLearning:
        return PromptLearning(
            holder.get(), settings.packs.prompt_learning, settings.retrieval.min_similarity
        )

    @server.tool(annotations=READ)
    async def retrieve_prompts(
        query: Annotated[Text, Field(description="The prompt to find similar examples for.")],
        domain: Annotated[Label | None, Field(description="Only this domain.")] = None,
        top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] = 5,
        min_performance: Annotated[Unit, Field(description="Minimum success_rate.")] = 0.7,
    ) -> RetrieveAnswer:
        """Similar prompts that performed well, nearest first. The domain and performance
        filters apply before the top_k cut."""
        found = await pack().retrieve(
            query, domain=domain, top_k=top_k, min_performance=min_performance
        )
        return RetrieveAnswer(
            results=[PromptResult.of(match) for match in found.matches],
            tier=found.tier,
            degraded_reason=found.degraded_reason,
        )

    @server.tool(annotations=WRITE)
    async def record_feedback(
        prompt_id: Annotated[
            Label, Field(description="The prompt's id, or 'new' to record a prompt first.")
        ],
        outcome: Outcome,
        prompt_text: Annotated[Text | None, Field(description="Required with 'new'.")] = None,
        domain: Label | None = None,
        user_feedback: UserFeedback | None = None,
        task_type: Label | None = None,
        tags: Annotated[list[str] | None, Field(max_length=MAX_TAGS)] = None,
        session_id: Annotated[
            Label | None, Field(description="Advance this session's state too.")
        ] = None,
    ) -> FeedbackAnswer:
        """Record how a prompt performed. Existing prompts update by moving average
        (30% this outcome, 70% history); 'new' stores the prompt with these first metrics."""
        if prompt_id == NEW and prompt_text is None:
            raise InvalidInput("prompt_text is required when prompt_id is 'new'")
        if prompt_id != NEW and prompt_text is not None:
            raise InvalidInput(
                f"prompt_text is only read with prompt_id 'new'; prompt {prompt_id!r} keeps "
                "the text it was recorded with"
            )
        feedback = Feedback(
            observation=Observation(
                success=outcome.success,
                latency_ms=outcome.latency_ms,
                output_tokens=outcome.output_tokens,
                quality_score=outcome.quality_score,
            ),
            prompt_id=None if prompt_id == NEW else prompt_id,
            prompt_text=prompt_text,
            domain=domain,
            task_type=task_type,
            tags=check_tags(tags),
            satisfaction=user_feedback.satisfaction if user_feedback else None,
            comments=user_feedback.comments if user_feedback else None,
            session_id=session_id,
        )
        recorded = await pack().record(feedback)
        return FeedbackAnswer(
            status="recorded",
            prompt_id=recorded.record.id,
            created=recorded.created,
            updated_metrics=MetricsOut.of(recorded.record.metrics),
            session=SessionAnswer.of(recorded.session) if recorded.session else None,
        )

    @server.tool(annotations=READ)
    async def suggest_improvements(
        prompt: Annotated[Text, Field(description="The prompt to improve.")],
        current_performance: CurrentPerformance | None = None,
        improvement_focus: Focus = "all",
    ) -> SuggestAnswer:
        """Suggestions measured from similar prompts' outcomes: each names a structural
        pattern this prompt lacks and the success-rate difference it shows among them. With
        a rewrite model configured, also the prompt rewritten to apply them."""
        learning = pack()
        result = await learning.suggest(prompt, improvement_focus)
        rewrite = await learning.rewrite(prompt, result.suggestions)
        average = fmean(s.success_rate for s in result.similar) if result.similar else None
        current = current_performance.success_rate if current_performance else None
        gap = None if average is None or current is None else round(average - current, 6)
        note = None
        if not result.similar:
            note = (
                "no similar prompts with recorded outcomes yet: record_feedback builds the "
                "history these suggestions are measured on"
            )
        elif not result.suggestions:
            note = (
                "similar prompts that did better share no structural pattern this prompt "
                "lacks (or they did no better)"
            )
        return SuggestAnswer(
            suggestions=[SuggestionOut.of(s) for s in result.suggestions],
            based_on=BasedOn(
                similar_prompts_analyzed=len(result.similar),
                avg_performance_of_similar=None if average is None else round(average, 6),
                current_success_rate=current,
                gap_to_similar=gap,
            ),
            tier=result.tier,
            note=note,
            rewrite=RewriteOut.of(rewrite) if rewrite is not None else None,
        )

    @server.tool(annotations=READ)
    async def get_analytics(
        domain: Label | None = None,
        time_range: TimeRange = "30d",
        metrics: Annotated[list[Metric] | None, Field(min_length=1, max_length=16)] = None,
    ) -> AnalyticsAnswer:
        """Prompt performance over a time range: totals, trend, per domain, and the
        success rate of prompts showing each structural pattern."""
        wanted: list[Metric] = list(dict.fromkeys(metrics or ["success_rate", "token_efficiency"]))
        result = await pack().analytics(domain=domain, time_range=time_range, metrics=wanted)
        return AnalyticsAnswer(
            summary=AnalyticsSummary(
                total_prompts=result.total_prompts,
                avg_success_rate=result.avg_success_rate,
                improvement_trend=result.improvement_trend,
                outcomes=result.outcomes,
                averages=result.averages,
            ),
            by_domain=result.by_domain,
            top_patterns=result.top_patterns,
            time_range=time_range,
        )

    @server.tool(annotations=READ)
    async def get_prompt_session(session_id: Label) -> SessionAnswer:
        """A prompt-optimisation session: iterations, best score, latest history."""
        return SessionAnswer.of(await pack().session(session_id))
