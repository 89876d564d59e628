"""The evaluation tools that need only the local embedding model: calculate_drift,
analyze_variants, analyze_trajectory, compare_trajectories (prompt-prix contracts).

No ``from __future__ import annotations``: the SDK reads each tool's signature.
"""

from collections.abc import Awaitable
from typing import Annotated, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from ralph_context.errors import ActorUnavailable
from ralph_context.packs.evaluation.semantic import (
    TextTrajectory,
    adams_interpretation,
    comparison_interpretation,
    drift,
    heller_interpretation,
    text_trajectory,
    trajectories_compared,
    variant_distances,
)
from ralph_context.packs.toolkit import READ, EngineHolder

__all__ = ["register_semantic_tools"]

T = TypeVar("T")
Text = Annotated[str, Field(min_length=1, max_length=100_000)]
Threshold = Annotated[float, Field(gt=0.0, le=2.0, allow_inf_nan=False)]
MAX_VARIANTS = 50


class Recommendation(BaseModel):
    variant: str
    distance: float
    text: str


class VariantsAnswer(BaseModel):
    constraint_name: str
    baseline_label: str
    variants_count: int
    from_baseline: dict[str, float]
    pairwise: dict[str, float]
    recommendations: list[Recommendation]


class SpikeOut(BaseModel):
    magnitude: float
    isolation_score: float
    position_ratio: float


class SentenceOut(BaseModel):
    index: int
    text: str
    velocity_from_previous: float | None


class TrajectoryAnswer(BaseModel):
    n_sentences: int
    mean_velocity: float
    mean_acceleration: float
    max_acceleration: float
    acceleration_spikes: list[SpikeOut]
    deadpan_score: float
    heller_score: float
    circularity_score: float
    tautology_density: float
    deceleration_score: float
    adams_interpretation: str
    heller_interpretation: str
    sentences: list[SentenceOut] | None = None

    @classmethod
    def of(cls, found: TextTrajectory, *, include_sentences: bool) -> "TrajectoryAnswer":
        t = found.trajectory
        sentences = None
        if include_sentences:
            speeds: list[float | None] = [None, *t.velocities]
            sentences = [
                SentenceOut(index=i, text=text, velocity_from_previous=speeds[i])
                for i, text in enumerate(found.sentences)
            ]
        return cls(
            n_sentences=t.n_sentences,
            mean_velocity=t.mean_velocity,
            mean_acceleration=t.mean_acceleration,
            max_acceleration=t.max_acceleration,
            acceleration_spikes=[
                SpikeOut(
                    magnitude=s.magnitude,
                    isolation_score=s.isolation_score,
                    position_ratio=s.position_ratio,
                )
                for s in t.spikes
            ],
            deadpan_score=t.deadpan_score,
            heller_score=t.heller_score,
            circularity_score=t.circularity_score,
            tautology_density=t.tautology_density,
            deceleration_score=t.deceleration_score,
            adams_interpretation=adams_interpretation(t.deadpan_score),
            heller_interpretation=heller_interpretation(t.heller_score),
            sentences=sentences,
        )


class TrajectorySummary(BaseModel):
    n_sentences: int
    deadpan_score: float
    mean_velocity: float


class ComparisonAnswer(BaseModel):
    fitness_score: float
    synthetic_deadpan: float
    synthetic_heller: float
    acceleration_dtw: float
    acceleration_correlation: float
    spike_position_match: float
    spike_count_match: float
    interpretation: str
    golden_summary: TrajectorySummary
    synthetic_summary: TrajectorySummary


def _summary(found: TextTrajectory) -> TrajectorySummary:
    t = found.trajectory
    return TrajectorySummary(
        n_sentences=t.n_sentences, deadpan_score=t.deadpan_score, mean_velocity=t.mean_velocity
    )


def register_semantic_tools(server: MCPServer, holder: EngineHolder) -> None:
    """Register the four embedding-only evaluation tools on ``server``."""
    deadline = holder.settings.inference.timeouts.embedding

    async def bounded(tool: str, work: Awaitable[T]) -> T:
        try:
            with anyio.fail_after(deadline):
                return await work
        except TimeoutError as exc:
            raise ActorUnavailable(f"{tool} took longer than its {deadline:g} s deadline") from exc

    @server.tool(annotations=READ)
    async def calculate_drift(text_a: Text, text_b: Text) -> float:
        """Cosine distance between two texts' embeddings: 0 identical, ~0.1-0.3 same meaning
        in other words, 0.5+ substantially different, 2 opposite."""
        return await bounded("calculate_drift", drift(holder.get(), text_a, text_b))

    @server.tool(annotations=READ)
    async def analyze_variants(
        variants: Annotated[
            dict[str, Text],
            Field(min_length=2, max_length=MAX_VARIANTS, description="Label -> prompt text."),
        ],
        baseline_label: str = "imperative",
        constraint_name: str = "unnamed",
    ) -> VariantsAnswer:
        """Cosine distances of prompt variants from the baseline and from each other; the
        recommended variants are those at least as far from the baseline as the average."""
        found = await bounded(
            "analyze_variants", variant_distances(holder.get(), variants, baseline_label)
        )
        return VariantsAnswer(
            constraint_name=constraint_name,
            baseline_label=baseline_label,
            variants_count=len(variants),
            from_baseline=found.from_baseline,
            pairwise=found.pairwise,
            recommendations=[
                Recommendation(variant=label, distance=distance, text=text)
                for label, distance, text in found.recommendations
            ],
        )

    @server.tool(annotations=READ)
    async def analyze_trajectory(
        text: Annotated[Text, Field(description="A passage of two or more sentences.")],
        acceleration_threshold: Threshold = 0.3,
        include_sentences: bool = False,
    ) -> TrajectoryAnswer:
        """Semantic velocity and acceleration along a text's sentences, with deadpan
        (isolated spikes), Heller (circular, decelerating), circularity, tautology and
        deceleration scores. Heuristics: compare texts, do not read them as absolutes."""
        found = await bounded(
            "analyze_trajectory", text_trajectory(holder.get(), text, acceleration_threshold)
        )
        return TrajectoryAnswer.of(found, include_sentences=include_sentences)

    @server.tool(annotations=READ)
    async def compare_trajectories(
        golden_text: Text, synthetic_text: Text, acceleration_threshold: Threshold = 0.3
    ) -> ComparisonAnswer:
        """How closely a generated text follows a reference's rhythm: DTW and correlation of
        acceleration profiles plus spike position and count matches. fitness_score is 0-1,
        lower = closer."""
        golden, synthetic, compared = await bounded(
            "compare_trajectories",
            trajectories_compared(
                holder.get(), golden_text, synthetic_text, acceleration_threshold
            ),
        )
        return ComparisonAnswer(
            fitness_score=compared.fitness_score,
            synthetic_deadpan=synthetic.trajectory.deadpan_score,
            synthetic_heller=synthetic.trajectory.heller_score,
            acceleration_dtw=compared.acceleration_dtw,
            acceleration_correlation=compared.acceleration_correlation,
            spike_position_match=compared.spike_position_match,
            spike_count_match=compared.spike_count_match,
            interpretation=comparison_interpretation(compared.fitness_score),
            golden_summary=_summary(golden),
            synthetic_summary=_summary(synthetic),
        )
