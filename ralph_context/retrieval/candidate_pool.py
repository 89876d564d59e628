"""The candidate pool of a retrieval: how the two halves' hits become candidates (exact
cosine, BM25's evidence from ``scoring.lexical_evidence``, how far behind the pool's best
cosine each is), which candidates the similarity gate lets in, and how a candidate's
neighbours' match is found. Pure functions of hits, apart from ``retriever.py``, which runs
the searches that produce them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ralph_context.actors.storage.actor import TextHit, VectorHit
from ralph_context.config import ScoringSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem
from ralph_context.retrieval.scoring import Candidate, lexical_evidence, match_strength, query_knee
from ralph_context.retrieval.words import content_words
from ralph_context.storage.table.threads import place

__all__ = [
    "CANDIDATE_FACTOR",
    "LEXICAL_FACTOR",
    "LEXICAL_PASS",
    "NEIGHBOUR_SEEDS",
    "POOL_ITEMS_AT_LEAST",
    "Candidates",
    "bm25_evidence",
    "lexical_scores",
    "passes_gate",
    "pool_of",
    "query_words",
    "ranked_behind",
    "with_neighbour_match",
]

# Each search half over-retrieves this many candidates per wanted item, so that re-scoring
# (recency, usefulness, type) and the budget have room to choose.
CANDIDATE_FACTOR = 4
# The best full-text hits whose neighbours are fetched (at most): on LoCoMo the top 5 and the
# top 20 seed equally well (recall@10 0.742-0.743), each place costs time (5 ~7 ms, 20 ~12 ms
# at 100k), and seeding from full-text hits lets the lookup run while the vector half does.
NEIGHBOUR_SEEDS = 5
# A candidate whose BM25 evidence (scoring.lexical_evidence) reaches this holds the query's
# rarer words: it passes the similarity gate whatever its cosine (an exact name or error
# code the embedding dilutes).
LEXICAL_PASS = 0.5
# Pools are drawn as for at least this many items, however few are asked for: a candidate's
# cosine is measured against its pool's best, and the best of 4 says little. Asking for 1
# item or for 10 then ranks the same way (the top 1 of each is the same item).
POOL_ITEMS_AT_LEAST = 10
# The full-text half only adds what embeddings miss (exact names, codes, error strings): its
# top 2·k are plenty, and at 100k items 40 full-text hits cost ~30% more than 20.
LEXICAL_FACTOR = 2


@dataclass(frozen=True)
class Candidates:
    """The semantic rung's two halves before the gate and the relevance formula.

    ``semantic`` is the vector half (items with cosine similarity), ``lexical`` the full-text
    half (items with raw BM25), each best first; ``pool`` is their union as retrieval scores
    it (exact cosine, BM25 evidence); ``neighbours`` are the items next
    to a pool member that passed the similarity gate, not in the pool themselves. Evaluations
    compare these with the scored result; a loop should call ``Engine.search`` instead.
    """

    semantic: list[tuple[ContextItem, float]]
    lexical: list[tuple[ContextItem, float]]
    pool: list[Candidate]
    neighbours: list[Candidate]


def pool_of(
    query: Vectors,
    vector_hits: list[VectorHit],
    text_hits: list[TextHit],
    *,
    rows: int,
    weights: ScoringSettings,
    text: str,
) -> list[Candidate]:
    """Union of both halves by id, each with its exact cosine similarity to the query and
    its BM25 evidence for the query ``text`` in a store of ``rows`` items (0 for items only
    the vector half found).

    Full-text hits stored without a vector cannot be compared and are left out here; the text
    rung still finds them.
    """
    lexical = lexical_scores(text_hits, rows, weights, text)
    pool: dict[str, Candidate] = {
        item.id: Candidate(item, similarity, vector, lexical.get(item.id, 0.0))
        for item, similarity, vector in vector_hits
    }
    probe = query.astype(np.float32)
    for item, _score, vector in text_hits:
        if item.id not in pool and vector is not None:
            pool[item.id] = Candidate(item, float(vector @ probe), vector, lexical[item.id])
    members = list(pool.values())
    return ranked_behind(members, members)


def ranked_behind(candidates: Sequence[Candidate], pool: Sequence[Candidate]) -> list[Candidate]:
    """``candidates`` with how far each cosine is behind the best of ``pool``'s: how near
    each comes to the model's own first choice among what the query found."""
    best = max((c.similarity for c in pool), default=-1.0)
    # Constructed, not dataclasses.replace'd: that costs several constructions, ~60 a search.
    return [
        Candidate(
            c.item, c.similarity, c.vector, c.lexical, c.neighbour, max(best - c.similarity, 0.0)
        )
        for c in candidates
    ]


def query_words(text: str) -> int:
    """How many content words the query has (``retrieval.words``), for BM25's knee."""
    return len(content_words(text))


def passes_gate(candidate: Candidate, min_similarity: float) -> bool:
    """A candidate is considered when its cosine reaches ``min_similarity`` or its BM25
    evidence reaches :data:`LEXICAL_PASS` (an exact name or error code the embedding
    dilutes)."""
    lexical = candidate.lexical or 0.0
    return candidate.similarity >= min_similarity or lexical >= LEXICAL_PASS


def with_neighbour_match(
    pool: Sequence[Candidate], weights: ScoringSettings, *, text_tier: bool
) -> list[Candidate]:
    """Each candidate with ``neighbour`` set to the best own match among the candidates
    stored right before and after it in its thread (``storage.table.threads.place``)."""
    places = [place(c.item) for c in pool]
    own = {
        at: match_strength(c.similarity, c.lexical, weights, text_tier=text_tier, behind=c.behind)
        for c, at in zip(pool, places, strict=True)
        if at is not None
    }
    found: list[Candidate] = []
    for c, at in zip(pool, places, strict=True):
        if at is None:
            found.append(c)
            continue
        source, iteration, sequence = at
        best = max(
            own.get((source, iteration, sequence - 1), 0.0),
            own.get((source, iteration, sequence + 1), 0.0),
        )
        if best == c.neighbour:
            found.append(c)
        else:
            found.append(Candidate(c.item, c.similarity, c.vector, c.lexical, best, c.behind))
    return found


def lexical_scores(
    hits: list[TextHit], rows: int, weights: ScoringSettings, text: str
) -> dict[str, float]:
    """Each hit's BM25 evidence (:func:`bm25_evidence`) in a store of ``rows`` items for the
    query ``text``, by item id."""
    evidence = bm25_evidence([score for _, score, _ in hits], float(rows), weights, text)
    return {item.id: value for (item, _, _), value in zip(hits, evidence, strict=True)}


def bm25_evidence(
    scores: Sequence[float], rows: float, weights: ScoringSettings, text: str
) -> list[float]:
    """The BM25 evidence (``scoring.lexical_evidence``) of each of one query's raw full-text
    ``scores`` in a table of ``rows`` rows, its knee from the query ``text``'s content words:
    the context store's retrieval and the tool packs' search weigh words alike."""
    best = max(scores, default=0.0)
    knee = float(query_knee(float(query_words(text)), weights))
    return [float(lexical_evidence(score, best, rows, knee)) for score in scores]
