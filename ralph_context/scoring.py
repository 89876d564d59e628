"""Relevance scoring and the token budget (pure functions; the scoring actor calls them).

relevance = match · recency · feedback · type, each factor from ``scoring`` in ralph.yaml:

- match (0-1), how well the item answers the query. Its own match is
  ``m = (1 - s)·cosine + s·lexical``: cosine clamped to [0, 1] and the item's BM25 score over
  the best of the query's full-text half (0 if that half did not find it), ``s`` =
  ``lexical_share``; on the text tier (no model) BM25 alone. An adjacent item (same source
  and iteration, stored right before or after it) adds its evidence as a noisy-or:
  ``match = 1 - (1 - m)·(1 - g·n)``, ``n`` the better neighbour's own match, ``g`` =
  ``neighbour_share``. A question's answer is often the turn after it; a failing test's
  output sits next to its error.
- recency, ``floor + (1 - floor)·exp(-λ·age)``, age in iterations: it decays towards
  ``recency_floor`` and never below, so an old exact answer keeps most of its score
  (λ = ``recency_decay``). Skills do not age: they are meant to outlive the iterations that
  taught them, and the lifecycle keeps them active too.
- feedback, ``1 + b·(2·usefulness - 1)``, ``b`` = ``usefulness_boost``: 1 for an unrated
  item (usefulness 0.5), up to ``1 + b`` for one marked helpful, down to ``1 - b``.
- type, 1 for a requested type (or when none was requested), else ``1 - type_penalty``.

Multiplying keeps a strong match on top: the loop's signals order comparably relevant
items (a newer decision over the one it replaced, a helpful tip over an unrated one) but
cannot lift an unrelated item over a related one, as the former weighted sum did (an item 30
iterations old lost up to 0.24 to a fresh one, more than most similarity differences). The
score is capped at 1. The breakdown carries every factor: ``semantic`` (cosine, or
``lexical`` alone on the text tier), ``lexical``, ``neighbour``, ``match``, ``recency``,
``usefulness`` (the item's score), ``feedback`` and ``type_match`` (the multipliers).

The budget keeps the best items whose estimated tokens fit, skipping (not stopping at) one
that does not fit, and drops near-duplicates (cosine > 0.95) of an item already kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from ralph_context.config import ScoringSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem, ContextType

__all__ = [
    "NEAR_DUPLICATE",
    "Candidate",
    "Ranking",
    "Scored",
    "combine",
    "contextual_match",
    "estimate_tokens",
    "fit_budget",
    "item_tokens",
    "match_strength",
    "rank",
    "recency",
    "relevance",
    "type_match",
]

NEAR_DUPLICATE = 0.95
# Skills age at this fraction of recency_decay: not at all (the fit agrees: loop MRR 0.859 ->
# 0.863 at the chosen weights, LoCoMo unchanged).
SKILL_DECAY_RATIO = 0.0
# Prompt tokens per character for English text and code; the consumer's LLM tokenizer is
# unknown here, and ~4 characters a token is the usual estimate.
CHARS_PER_TOKEN = 4
# "### [ITERATION]" plus the blank line around a block, as the Ralph hook renders it.
HEADER_TOKENS = 6

# A float or an array of them: the fitting script scores whole pools at once with the very
# functions the engine uses one candidate at a time.
F = TypeVar("F", float, NDArray[np.float64])


@dataclass(frozen=True)
class Scored:
    """An item with its relevance and the factors behind it."""

    item: ContextItem
    score: float
    breakdown: dict[str, float]
    vector: Vectors | None = None


def recency(age: int, content_type: ContextType, weights: ScoringSettings | None = None) -> float:
    """``floor + (1 - floor)·exp(-λ·age)``; future items (negative age) and skills count as
    fresh."""
    weights = weights or ScoringSettings()
    rate = weights.recency_decay * (SKILL_DECAY_RATIO if content_type is ContextType.SKILL else 1)
    return float(_decay(float(max(age, 0)), rate, weights.recency_floor))


def _decay(age: F, rate: F | float, floor: float) -> F:
    return floor + (1 - floor) * np.exp(-rate * age)  # type: ignore[no-any-return]


def type_match(
    content_type: ContextType,
    requested: Sequence[ContextType],
    weights: ScoringSettings | None = None,
) -> float:
    """1.0 for a requested type (every type, when none was requested), else
    ``1 - type_penalty``."""
    weights = weights or ScoringSettings()
    return 1.0 if not requested or content_type in requested else 1.0 - weights.type_penalty


def contextual_match(own: F, neighbour: F, share: float) -> F:
    """Noisy-or of an item's own match and its best neighbour's: ``1 - (1-m)·(1-g·n)``."""
    return 1 - (1 - own) * (1 - share * neighbour)


def combine(
    match: F, age: F, decay: F | float, usefulness: F, type_factor: F | float, w: ScoringSettings
) -> F:
    """The relevance of candidates from their factors (floats, or arrays of equal shape).

    ``decay`` is the per-iteration rate for each item (``recency_decay``, or the skill rate).
    """
    recent = _decay(age, decay, w.recency_floor)
    feedback = 1 + w.usefulness_boost * (2 * usefulness - 1)
    return np.minimum(match * recent * feedback * type_factor, 1.0)  # type: ignore[no-any-return]


def relevance(
    item: ContextItem,
    similarity: float,
    *,
    now: int,
    requested: Sequence[ContextType],
    weights: ScoringSettings,
    vector: Vectors | None = None,
    match: str = "semantic",
    lexical: float | None = None,
    neighbour: float = 0.0,
) -> Scored:
    """Score one candidate; ``now`` is the current iteration (the lifecycle clock).

    ``match`` names the similarity factor in the breakdown (``lexical`` on the text tier).
    ``lexical`` (semantic tier only) is the candidate's normalised BM25, mixed into the
    match by ``weights.lexical_share``; ``neighbour`` is the best own match of an adjacent
    item, mixed in by ``weights.neighbour_share``.
    """
    factors = {match: _unit(similarity)}
    if lexical is not None:
        factors["lexical"] = _unit(lexical)
    own = match_strength(similarity, lexical, weights.lexical_share)
    combined = contextual_match(own, _unit(neighbour), weights.neighbour_share)
    rate = weights.recency_decay * (
        SKILL_DECAY_RATIO if item.content_type is ContextType.SKILL else 1
    )
    age = float(max(now - item.created_iteration, 0))
    kind = type_match(item.content_type, requested, weights)
    usefulness = item.usefulness_score
    factors |= {
        "neighbour": _unit(neighbour),
        "match": combined,
        "recency": _decay(age, rate, weights.recency_floor),
        "usefulness": usefulness,
        "feedback": 1 + weights.usefulness_boost * (2 * usefulness - 1),
        "type_match": kind,
    }
    score = float(combine(combined, age, rate, usefulness, kind, weights))
    return Scored(item, score, factors, vector)


def match_strength(similarity: float, lexical: float | None, share: float) -> float:
    """The semantic factor: ``(1 - share)·similarity + share·lexical``, each clamped to
    [0, 1]; the similarity alone when there is no lexical part (text tier, or no full-text
    half)."""
    if lexical is None:
        return _unit(similarity)
    return (1 - share) * _unit(similarity) + share * _unit(lexical)


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def item_tokens(item: ContextItem) -> int:
    """Tokens an item costs once injected: its text plus the ``### [TYPE]`` header line."""
    return estimate_tokens(item.content) + HEADER_TOKENS


def estimate_tokens(text: str) -> int:
    """Prompt tokens ``text`` will cost, estimated from its length (at least 1)."""
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def fit_budget(
    ranked: Sequence[Scored],
    *,
    max_items: int,
    max_tokens: int,
    cost: Callable[[ContextItem], int] = item_tokens,
) -> list[Scored]:
    """The best items, in order, that fit ``max_tokens`` without near-duplicates.

    Args:
        ranked: Candidates, best first.
        max_items: At most this many are kept.
        max_tokens: Their estimated token costs sum to at most this.
        cost: Token cost of an item (default: :func:`item_tokens`).
    """
    return _fit(ranked, max_items=max_items, max_tokens=max_tokens, cost=cost).kept


def _fit(
    ranked: Sequence[Scored],
    *,
    max_items: int,
    max_tokens: int,
    cost: Callable[[ContextItem], int],
) -> Ranking:
    """The best of ``ranked`` that fit; ``below_min_score`` is left for the caller."""
    kept: list[Scored] = []
    kept_vectors: list[Vectors] = []
    spent = over_budget = duplicates = 0
    for candidate in ranked:
        if len(kept) >= max_items:
            break
        if candidate.vector is not None and kept_vectors:
            if float(np.max(np.stack(kept_vectors) @ candidate.vector)) > NEAR_DUPLICATE:
                duplicates += 1
                continue
        price = cost(candidate.item)
        if spent + price > max_tokens:
            over_budget += 1
            continue
        kept.append(candidate)
        spent += price
        if candidate.vector is not None:
            kept_vectors.append(candidate.vector)
    return Ranking(kept, spent, 0, over_budget, duplicates)


@dataclass(frozen=True)
class Candidate:
    """An item found by a search: its match strength (cosine, or normalised BM25 on the
    text tier) and its vector when it has one (for the near-duplicate check)."""

    item: ContextItem
    similarity: float
    vector: Vectors | None = None
    # Normalised BM25 (0-1) from the semantic tier's full-text half; None off that tier.
    lexical: float | None = None
    # The best own match of an adjacent item (same source and iteration), 0 if none.
    neighbour: float = 0.0


@dataclass(frozen=True)
class Ranking:
    """What :func:`rank` kept, and how many candidates each rule turned away."""

    kept: list[Scored]
    tokens: int
    below_min_score: int
    over_budget: int
    duplicates: int


def rank(
    candidates: Sequence[Candidate],
    *,
    now: int,
    requested: Sequence[ContextType],
    weights: ScoringSettings,
    min_score: float,
    max_items: int,
    max_tokens: int,
    match: str = "semantic",
) -> Ranking:
    """Score every candidate, drop those under ``min_score``, and keep the best that fit.

    Ties keep the order the candidates came in (the search's own ranking). ``match`` names
    the first factor in each breakdown: ``semantic`` for cosine, ``lexical`` for the text
    tier's normalised BM25, so a reader never mistakes one for the other.
    """
    scored = [
        relevance(
            c.item,
            c.similarity,
            now=now,
            requested=requested,
            weights=weights,
            vector=c.vector,
            match=match,
            lexical=c.lexical,
            neighbour=c.neighbour,
        )
        for c in candidates
    ]
    passing = [s for s in scored if s.score >= min_score]
    passing.sort(key=lambda s: s.score, reverse=True)
    fit = _fit(passing, max_items=max_items, max_tokens=max_tokens, cost=item_tokens)
    return replace(fit, below_min_score=len(scored) - len(passing))
