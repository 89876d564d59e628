"""Relevance scoring and the token budget (pure functions; the scoring actor calls them).

relevance = match · recency · feedback · type, each factor from ``scoring`` in ralph.yaml:

- match (0-1), how well the item answers the query. Its own match is
  ``m = (1 - w)·S + w·L`` (:func:`own_match`, ``w`` = ``lexical_weight``; an item the
  full-text half did not find keeps at least ``f·exp(-behind / c)``, ``f`` =
  ``semantic_lead_floor``, off by default, ``c`` = ``semantic_closeness``:
  :func:`lead_floor`): ``S`` cosine's evidence
  (:func:`semantic_evidence`: a logistic curve of the cosine or-ed with how close
  it comes to the query's best cosine), ``L`` BM25's (:func:`lexical_evidence`: its score
  over the query's best hit plus a knee of rare words' worth that grows with the query's
  length; 0 if the full-text half did not find it); ``S`` alone for an archived item (no
  full-text index), ``L`` alone on the text tier (no model). An adjacent item (same source
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
score is capped at 1. The breakdown carries every factor: ``semantic`` (the cosine, or
``lexical`` alone on the text tier), ``lexical`` (``L``), ``neighbour``, ``match``, ``recency``,
``usefulness`` (the item's score), ``feedback`` and ``type_match`` (the multipliers).

The budget keeps the best items whose estimated tokens fit, skipping (not stopping at) one
that does not fit, and drops near-duplicates (cosine > 0.95) of an item already kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from ralph_context.config import ScoringSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem, ContextType
from ralph_context.retrieval.budget import NEAR_DUPLICATE, Ranking, Scored, fit, fit_budget
from ralph_context.retrieval.tokens import estimate_tokens, item_tokens

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
    "lead_floor",
    "lexical_evidence",
    "match_strength",
    "own_match",
    "query_knee",
    "rank",
    "recency",
    "relevance",
    "semantic_evidence",
    "type_match",
]

# Skills age at this fraction of recency_decay: not at all (the fit agrees: loop MRR 0.859 ->
# 0.863 at the chosen weights, LoCoMo unchanged).
SKILL_DECAY_RATIO = 0.0

# A float or an array of them: the fitting script scores whole pools at once with the very
# functions the engine uses one candidate at a time.
F = TypeVar("F", float, NDArray[np.float64])


def recency(age: int, content_type: ContextType, weights: ScoringSettings | None = None) -> float:
    """``floor + (1 - floor)·exp(-λ·age)``; future items (negative age) and skills count as
    fresh."""
    weights = weights or ScoringSettings()
    rate = weights.recency_decay * (SKILL_DECAY_RATIO if content_type is ContextType.SKILL else 1)
    return float(_decay(float(max(age, 0)), rate, weights.recency_floor))


def _decay(age: F, rate: F | float, floor: float) -> F:
    if isinstance(age, float) and isinstance(rate, float):
        # One candidate: math's exp, not numpy's (~1 µs against ~10 per call; a search
        # scores ~130 candidates, several factors each).
        return floor + (1 - floor) * math.exp(-rate * age)
    # unused-ignore: mypy checks this body once per type F stands for.
    return floor + (1 - floor) * np.exp(-rate * age)  # type: ignore[no-any-return, unused-ignore]


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
    product = match * recent * (1 + w.usefulness_boost * (2 * usefulness - 1)) * type_factor
    if isinstance(product, float):
        return min(product, 1.0)
    return np.minimum(product, 1.0)  # type: ignore[no-any-return, unused-ignore]


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
    behind: float = math.inf,
) -> Scored:
    """Score one candidate; ``now`` is the current iteration (the lifecycle clock).

    ``match`` names the similarity factor in the breakdown (``lexical`` on the text tier).
    ``lexical`` (semantic tier only) is the candidate's BM25 evidence
    (:func:`lexical_evidence`), joined to its cosine's by :func:`own_match`; ``neighbour`` is
    the best own match of an adjacent item, mixed in by ``weights.neighbour_share``.
    """
    factors = {match: _unit(similarity)}
    if lexical is not None:
        factors["lexical"] = _unit(lexical)
    text_tier = match != "semantic"
    combined, age, rate, kind = _parts(
        item, similarity, lexical, neighbour, behind, now, requested, weights, text_tier
    )
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


def _parts(
    item: ContextItem,
    similarity: float,
    lexical: float | None,
    neighbour: float,
    behind: float,
    now: int,
    requested: Sequence[ContextType],
    weights: ScoringSettings,
    text_tier: bool,
) -> tuple[float, float, float, float]:
    """A candidate's match (with its neighbour's), age, decay rate and type factor."""
    own = match_strength(similarity, lexical, weights, text_tier=text_tier, behind=behind)
    combined = contextual_match(own, _unit(neighbour), weights.neighbour_share)
    rate = weights.recency_decay * (
        SKILL_DECAY_RATIO if item.content_type is ContextType.SKILL else 1
    )
    age = float(max(now - item.created_iteration, 0))
    return combined, age, rate, type_match(item.content_type, requested, weights)


def _score(
    c: Candidate,
    now: int,
    requested: Sequence[ContextType],
    weights: ScoringSettings,
    *,
    text_tier: bool,
) -> float:
    """:func:`relevance`'s score of ``c`` without its breakdown."""
    combined, age, rate, kind = _parts(
        c.item, c.similarity, c.lexical, c.neighbour, c.behind, now, requested, weights, text_tier
    )
    return float(combine(combined, age, rate, c.item.usefulness_score, kind, weights))


def semantic_evidence(cosine: F, behind: F | float, w: ScoringSettings) -> F:
    """How surely cosine says "this answers it", 0-1: a noisy-or of a logistic curve of the
    cosine itself around ``semantic_midpoint`` and of how close it comes to the best cosine
    among the query's candidates, ``exp(-behind / semantic_closeness)``, ``behind`` that
    best minus its own (``candidate_pool.ranked_behind``).

    Cosine's scale is the model's and the query's: MiniLM puts unrelated sentences at
    0.0-0.15 and a question asked in other words than its answer at 0.25-0.5, and some
    queries lift every candidate. The model's own first choice (and a near tie with it) is
    strong evidence whatever the absolute value; the absolute curve still carries a strong
    cosine that is not the first. Fitted against the former relative curve, the candidate's
    z-score among the pool, which saturated for every candidate that stood out at all: a
    paraphrase's answer at cosine 0.45 then weighed as much as a decoy at 0.34 that shared
    one word with the question, and the decoy won (benchmarks/retrieval/fit.py).
    """
    absolute = _logistic(cosine, w.semantic_midpoint, w.semantic_slope)
    relative = _closeness(behind, w.semantic_closeness)
    return 1 - (1 - absolute) * (1 - relative)


def _closeness(behind: F | float, scale: float) -> F:
    if isinstance(behind, float):  # one candidate: math, as in _decay (exp(-inf) is 0)
        return math.exp(-max(behind, 0.0) / scale)  # type: ignore[return-value, unused-ignore]
    return np.exp(-np.maximum(behind, 0.0) / scale)  # type: ignore[no-any-return, unused-ignore]


def _logistic(value: F | float, midpoint: float, slope: float) -> F:
    # Clipped: exp overflows past ~709, and a curve is flat long before ±60.
    if isinstance(value, float):  # one candidate: math, as in _decay
        exponent = min(max(-slope * (value - midpoint), -60.0), 60.0)
        return 1 / (1 + math.exp(exponent))  # type: ignore[return-value, unused-ignore]
    clipped = np.clip(-slope * (value - midpoint), -60.0, 60.0)
    return 1 / (1 + np.exp(clipped))  # type: ignore[no-any-return, unused-ignore]


def lexical_evidence(bm25: F, best: F | float, items: F | float, knee: F | float) -> F:
    """How surely BM25 says "this answers it", 0-1: ``bm25 / (best + knee·idf₁(items))``,
    ``best`` the query's best BM25, ``idf₁`` the BM25 weight of a word found in one item
    of ``items`` and ``knee`` the query's (:func:`query_knee`: more for a longer query).

    Relative to the best hit, as BM25 is only comparable within one query, but the best hit
    itself counts fully only when it holds several of the query's rare words: one rare word
    of a five-word question makes it ``1 / (1 + knee)``, one word in every tenth item about
    a third of that. Dividing by the best hit alone gave any item sharing one common word
    with the query the whole lexical share whenever nothing shared more, outweighing a
    paraphrase that shares none.
    """
    floor = knee * _rare_word_weight(items)
    return np.maximum(bm25, 0.0) / (np.maximum(best, 0.0) + floor)  # type: ignore[no-any-return]


def query_knee(words: F | float, w: ScoringSettings) -> F | float:
    """The knee of a query of ``words`` content words (``retrieval.words``):
    ``lexical_knee + lexical_knee_per_word·words``. One shared word is a smaller part of
    a long question than of a short one."""
    return w.lexical_knee + w.lexical_knee_per_word * words


def _rare_word_weight(items: F | float) -> F | float:
    """BM25's idf of a word that occurs in one of ``items`` (Lucene's, as Lance computes)."""
    n = np.maximum(items, 1.0)
    return np.log(1 + (n - 0.5) / 1.5)  # type: ignore[no-any-return]


def own_match(semantic: F, lexical: F | float, weight: float, lead: F | float = 0.0) -> F:
    """An item's own match from both kinds of evidence, ``(1 - w)·S + w·L``; for one the
    full-text half did not find (``L`` = 0), at least its semantic lead's floor
    (:func:`lead_floor`; 0, off, by default).

    Both are on one 0-1 scale, so the weight means what it says; fitted by cross-validation
    against a noisy-or of the two, which lost on every set (benchmarks/retrieval/fit.py).
    The floor is for a question asked in other words than its answer, which shares no word
    while a decoy shares a common one; only at ``L`` = 0, since an item sharing words is
    credited for them by the blend, and a floor under every first choice let an older
    decision outrank the one that replaced it. It is off by default: ``L`` = 0 says the
    full-text half did not return the item, not that it shares no word, and fitted it let
    near-duplicate vector hits outrank the one holding the query's rare identifier
    (benchmarks/retrieval/results-issue61/stop68.md).
    """
    blend = (1 - weight) * semantic + weight * lexical
    if isinstance(lead, float) and lead <= 0.0:  # the floor off: the blend alone
        return blend
    if isinstance(blend, float) and isinstance(lexical, float):
        one = max(blend, lead) if lexical <= 0 else blend
        return one  # type: ignore[return-value, unused-ignore]
    shares_none = np.asarray(lexical) <= 0
    floored = np.where(shares_none, np.maximum(blend, lead), blend)
    return floored  # type: ignore[no-any-return, unused-ignore]


def lead_floor(behind: F | float, w: ScoringSettings) -> F | float:
    """The least own match of a candidate ``behind`` the query's best cosine:
    ``semantic_lead_floor · exp(-behind / semantic_closeness)`` (0 when the floor is off)."""
    if w.semantic_lead_floor <= 0.0:
        return 0.0
    return w.semantic_lead_floor * _closeness(behind, w.semantic_closeness)


def match_strength(
    similarity: float,
    lexical: float | None,
    weights: ScoringSettings,
    *,
    text_tier: bool = False,
    behind: float = math.inf,
) -> float:
    """A candidate's own match: on the semantic tier :func:`own_match` of its cosine's and
    its BM25's evidence, or its cosine's alone when no full-text half searched it (archived
    items: the archive has no full-text index, so sharing no word is not known); on the
    text tier ``similarity`` already is the BM25 evidence."""
    if text_tier:
        return _unit(similarity)
    semantic = semantic_evidence(similarity, behind, weights)
    if lexical is None:
        return float(semantic)
    lead = lead_floor(behind, weights)
    return float(own_match(semantic, _unit(lexical), weights.lexical_weight, lead))


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)


@dataclass(frozen=True)
class Candidate:
    """An item found by a search: its match strength (cosine, or normalised BM25 on the
    text tier) and its vector when it has one (for the near-duplicate check)."""

    item: ContextItem
    similarity: float
    vector: Vectors | None = None
    # BM25 evidence (lexical_evidence, 0-1) from the semantic tier's full-text half; None off
    # that tier and for archived items.
    lexical: float | None = None
    # The best own match of an adjacent item (same source and iteration), 0 if none.
    neighbour: float = 0.0
    # How far its cosine is behind the best of the query's candidates (inf: not measured).
    behind: float = math.inf


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
    relative: float = 0.0,
) -> Ranking:
    """Score every candidate, drop those under ``min_score`` or under ``relative`` times the
    best score, and keep the best that fit.

    Ties keep the order the candidates came in (the search's own ranking). ``match`` names
    the first factor in each breakdown: ``semantic`` for cosine, ``lexical`` for the text
    tier's normalised BM25, so a reader never mistakes one for the other.
    """

    def scored(c: Candidate) -> Scored:
        return relevance(
            c.item,
            c.similarity,
            now=now,
            requested=requested,
            weights=weights,
            vector=c.vector,
            match=match,
            lexical=c.lexical,
            neighbour=c.neighbour,
            behind=c.behind,
        )

    # Every candidate's score first; the breakdown only for those the budget looks at (of
    # ~60 candidates a search scores, ~10 are kept).
    scores = [_score(c, now, requested, weights, text_tier=match != "semantic") for c in candidates]
    floor = max(min_score, relative * max(scores, default=0.0))
    order = sorted(
        (i for i, score in enumerate(scores) if score >= floor), key=lambda i: -scores[i]
    )
    kept = fit(
        (scored(candidates[i]) for i in order),
        max_items=max_items,
        max_tokens=max_tokens,
        cost=item_tokens,
    )
    return replace(kept, below_min_score=len(scores) - len(order))
