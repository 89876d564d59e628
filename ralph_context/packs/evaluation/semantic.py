"""The embedding-only evaluation tools' logic: drift, variant distances, trajectories.

All of them embed with the engine's local model (no embedding server, unlike the spec's
semantic-chunker). Without the model they refuse with ``ActorUnavailable`` naming why:
there is no honest text-only substitute for a cosine distance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ralph_context.engine import Engine
from ralph_context.errors import ActorUnavailable, InvalidInput
from ralph_context.packs.evaluation.sentences import split_sentences
from ralph_context.packs.evaluation.trajectory import Comparison, Trajectory, analyze, compare

__all__ = [
    "TextTrajectory",
    "VariantDistances",
    "adams_interpretation",
    "comparison_interpretation",
    "drift",
    "heller_interpretation",
    "text_trajectory",
    "trajectories_compared",
    "variant_distances",
]


@dataclass(frozen=True)
class VariantDistances:
    from_baseline: dict[str, float]
    pairwise: dict[str, float]
    recommendations: list[tuple[str, float, str]]


@dataclass(frozen=True)
class TextTrajectory:
    sentences: list[str]
    trajectory: Trajectory


async def _embed(engine: Engine, texts: Sequence[str], tool: str) -> np.ndarray:
    vectors = await engine.embed(texts)
    if any(vector is None for vector in vectors):
        reason = engine.semantic_unavailable or "the embedding model did not answer"
        raise ActorUnavailable(f"{tool} needs the local embedding model: {reason}")
    return np.stack([np.asarray(v, dtype=np.float64) for v in vectors])


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine distance of two unit vectors, 0 (same) to 2 (opposite)."""
    return round(float(min(max(1.0 - float(a @ b), 0.0), 2.0)), 6)


async def drift(engine: Engine, text_a: str, text_b: str) -> float:
    a, b = await _embed(engine, [text_a, text_b], "calculate_drift")
    return _distance(a, b)


async def variant_distances(
    engine: Engine, variants: Mapping[str, str], baseline_label: str
) -> VariantDistances:
    """Distances from the baseline and between every pair; the variants recommended for
    testing are those at least as far from the baseline as the average variant (the ones
    most likely to change a model's behaviour), farthest first."""
    if len(variants) < 2:
        raise InvalidInput(f"variants needs at least two entries (got {len(variants)})")
    if baseline_label not in variants:
        known = ", ".join(repr(label) for label in variants)
        raise InvalidInput(f"baseline_label {baseline_label!r} is not a variant; labels: {known}")
    labels = list(variants)
    matrix = await _embed(engine, [variants[label] for label in labels], "analyze_variants")
    row = dict(zip(labels, matrix, strict=True))
    base = row[baseline_label]
    from_baseline = {
        label: _distance(base, row[label]) for label in labels if label != baseline_label
    }
    pairwise = {f"({a}, {b})": _distance(row[a], row[b]) for a, b in combinations(labels, 2)}
    average = sum(from_baseline.values()) / len(from_baseline)
    recommended = sorted(
        ((label, d, variants[label]) for label, d in from_baseline.items() if d >= average),
        key=lambda entry: -entry[1],
    )
    return VariantDistances(from_baseline, pairwise, recommended)


async def text_trajectory(engine: Engine, text: str, threshold: float) -> TextTrajectory:
    sentences = split_sentences(text)
    if len(sentences) < 2:
        raise InvalidInput(
            f"a trajectory needs at least two sentences; found {len(sentences)} in the text"
        )
    matrix = await _embed(engine, sentences, "analyze_trajectory")
    return TextTrajectory(sentences, analyze(matrix.astype(np.float32), threshold))


async def trajectories_compared(
    engine: Engine, golden: str, synthetic: str, threshold: float
) -> tuple[TextTrajectory, TextTrajectory, Comparison]:
    gold = await text_trajectory(engine, golden, threshold)
    other = await text_trajectory(engine, synthetic, threshold)
    return gold, other, compare(gold.trajectory, other.trajectory, threshold)


def adams_interpretation(score: float) -> str:
    if score >= 0.6:
        return "Strong deadpan structure: an isolated semantic spike in a stable background"
    if score >= 0.3:
        return "Moderate deadpan structure: isolated semantic spike in stable background"
    if score > 0:
        return "Weak deadpan structure: spikes stand out little from their surroundings"
    return "No deadpan structure: no acceleration spike above the threshold"


def heller_interpretation(score: float) -> str:
    if score >= 0.6:
        return "High circular reasoning: the text slows down and returns to where it began"
    if score >= 0.3:
        return "Moderate circular reasoning"
    return "Low circular reasoning"


def comparison_interpretation(fitness: float) -> str:
    if fitness < 0.2:
        return "Close structural match"
    if fitness < 0.4:
        return "Good structural match with some rhythm deviation"
    if fitness < 0.6:
        return "Partial structural match: rhythm or spikes differ"
    return "Poor structural match"
