"""Relevance scoring and the token budget (pure functions; the scoring actor will call them).

relevance = semantic·w_s + recency·w_r + usefulness·w_u + type_match·w_t, weights from
``scoring`` in ralph.yaml (they sum to 1, so relevance stays in [0, 1]):

- semantic: how well the item matches the query. On the semantic tier this is
  ``(1 - s)·cosine + s·lexical``: cosine similarity clamped to [0, 1], and the item's BM25
  score over the best BM25 score of the query's full-text half (0 if that half did not find
  it), ``s`` = ``scoring.lexical_share``. Exact tokens (names, codes, error strings) that the
  embedding dilutes count this way; on LoCoMo the mix lifts evidence recall@10 from 0.455
  (cosine) and 0.623 (BM25) to 0.677 (``benchmarks/retrieval``). Both parts are in the
  breakdown. On the text tier (no model) it is the normalised BM25 alone, named ``lexical``.
- recency: exp(-λ·age), age in iterations since the item was stored; λ = 0.1, and 0.05 for
  skills, which are meant to outlive the iterations that taught them.
- usefulness: the item's feedback score (starts 0.5; ``mark_useful`` moves it).
- type_match: 1.0 when the item's type was asked for (or no type was), else 0.5.

The budget keeps the best items whose estimated tokens fit, skipping (not stopping at) one
that does not fit, and drops near-duplicates (cosine > 0.95) of an item already kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ralph_context.config import ScoringSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem, ContextType

__all__ = [
    "NEAR_DUPLICATE",
    "Candidate",
    "Ranking",
    "Scored",
    "estimate_tokens",
    "fit_budget",
    "item_tokens",
    "match_strength",
    "rank",
    "recency",
    "relevance",
    "type_match",
]

DECAY = 0.1
SKILL_DECAY = 0.05
NEAR_DUPLICATE = 0.95
# Prompt tokens per character for English text and code; the consumer's LLM tokenizer is
# unknown here, and ~4 characters a token is the usual estimate.
CHARS_PER_TOKEN = 4
# "### [ITERATION]" plus the blank line around a block, as the Ralph hook renders it.
HEADER_TOKENS = 6


@dataclass(frozen=True)
class Scored:
    """An item with its relevance and the four factors behind it."""

    item: ContextItem
    score: float
    breakdown: dict[str, float]
    vector: Vectors | None = None


def recency(age: int, content_type: ContextType) -> float:
    """exp(-λ·age); future items (negative age) count as fresh."""
    rate = SKILL_DECAY if content_type is ContextType.SKILL else DECAY
    return math.exp(-rate * max(age, 0))


def type_match(content_type: ContextType, requested: Sequence[ContextType]) -> float:
    """1.0 for a requested type (every type, when none was requested), else 0.5."""
    return 1.0 if not requested or content_type in requested else 0.5


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
) -> Scored:
    """Score one candidate; ``now`` is the current iteration (the lifecycle clock).

    ``match`` names the similarity factor in the breakdown (``lexical`` on the text tier).
    ``lexical`` (semantic tier only) is the candidate's normalised BM25, mixed into the
    match by ``weights.lexical_share``.
    """
    factors = {match: _unit(similarity)}
    if lexical is not None:
        factors["lexical"] = _unit(lexical)
    matched = match_strength(similarity, lexical, weights.lexical_share)
    factors |= {
        "recency": recency(now - item.created_iteration, item.content_type),
        "usefulness": item.usefulness_score,
        "type_match": type_match(item.content_type, requested),
    }
    score = (
        matched * weights.semantic_weight
        + factors["recency"] * weights.recency_weight
        + factors["usefulness"] * weights.usefulness_weight
        + factors["type_match"] * weights.type_match_weight
    )
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
        )
        for c in candidates
    ]
    passing = [s for s in scored if s.score >= min_score]
    passing.sort(key=lambda s: s.score, reverse=True)
    fit = _fit(passing, max_items=max_items, max_tokens=max_tokens, cost=item_tokens)
    return replace(fit, below_min_score=len(scored) - len(passing))
