"""The token budget: the best items, in order, that fit, without near-duplicates.

Split from ``scoring`` (which re-exports these names): scoring computes relevance, this
keeps what a client's budget has room for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem
from ralph_context.retrieval.tokens import item_tokens

__all__ = ["NEAR_DUPLICATE", "Ranking", "Scored", "fit", "fit_budget"]

NEAR_DUPLICATE = 0.95


@dataclass(frozen=True)
class Scored:
    """An item with its relevance and the factors behind it."""

    item: ContextItem
    score: float
    breakdown: dict[str, float]
    vector: Vectors | None = None


@dataclass(frozen=True)
class Ranking:
    """What ``scoring.rank`` kept, and how many candidates each rule turned away."""

    kept: list[Scored]
    tokens: int
    below_min_score: int
    over_budget: int
    duplicates: int


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
    return fit(ranked, max_items=max_items, max_tokens=max_tokens, cost=cost).kept


def fit(
    ranked: Iterable[Scored],
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
