"""Grade a relevance formula on saved pools, all queries at once (for the fit).

Every pool's candidates are laid end to end in flat arrays, so one grid point is scored,
gated, ranked and graded with a handful of numpy operations instead of a loop over queries.
The scoring is ``ralph_context.retrieval.scoring``'s own functions (``semantic_evidence``,
``lexical_evidence``, ``own_match``, ``contextual_match``, ``combine``), so what is fitted is
what ``Engine.search`` computes; the gate is ``candidate_pool.passes_gate``'s rule.

What a grid point yields per query: the served ranking (no threshold, no budget) and the
scores, so that thresholds are graded on the same ranking afterwards
(:meth:`Flat.default_graded`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from benchmarks.retrieval.pools import K, Pool
from ralph_context.config import ScoringSettings
from ralph_context.retrieval.candidate_pool import query_words
from ralph_context.retrieval.scoring import (
    combine,
    contextual_match,
    lead_floor,
    lexical_evidence,
    own_match,
    query_knee,
    semantic_evidence,
)

__all__ = ["Flat", "Graded"]

Array = NDArray[np.float64]
Ints = NDArray[np.int64]


@dataclass(frozen=True)
class Graded:
    """Per query: recall@k (share of answer groups found), reciprocal rank of the first
    answer in the top 10, whether the top 1 / top 3 hold an answer, and items returned."""

    recall: Array
    rr: Array
    top1: Array
    top3: Array
    returned: Array
    wrong: Array  # returned items that answer nothing


class Flat:
    """The pools' candidates end to end, with per-query offsets and labels."""

    def __init__(self, pools: Sequence[Pool]) -> None:
        self.pools = list(pools)
        sizes = np.array([len(p.similarity) for p in pools], dtype=np.int64)
        self.start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.query = np.repeat(np.arange(len(pools)), sizes)
        cat = np.concatenate
        self.similarity = cat([p.similarity for p in pools])
        self.bm25 = cat([p.bm25 for p in pools])
        self.items = np.repeat(np.array([p.items for p in pools], dtype=np.float64), sizes)
        self.age = cat([p.age for p in pools])
        self.decay = cat([p.decay for p in pools])
        self.usefulness = cat([p.usefulness for p in pools])
        self.tokens = cat([p.tokens for p in pools])
        self.member = cat([p.member for p in pools])
        shift = np.repeat(self.start, sizes)
        self.left = np.where(
            cat([p.left for p in pools]) >= 0, cat([p.left for p in pools]) + shift, -1
        )
        self.right = np.where(
            cat([p.right for p in pools]) >= 0, cat([p.right for p in pools]) + shift, -1
        )
        # One answer group per candidate at most (an item answers one evidence turn).
        group = np.full(len(self.similarity), -1, dtype=np.int64)
        for p, offset in zip(pools, self.start, strict=True):
            for g, members in enumerate(p.labels):
                for i in members:
                    group[offset + i] = g
        self.group = group
        best = np.zeros(len(pools))
        np.maximum.at(best, self.query, self.bm25)
        # How far each is behind its query's best pool member, as candidate_pool.ranked_behind.
        top = np.full(len(pools), -1.0)
        np.maximum.at(top, self.query, np.where(self.member, self.similarity, -1.0))
        self.behind = np.maximum(top[self.query] - self.similarity, 0.0)
        # Each query's content words (the knee of BM25's evidence), as the retriever counts.
        words = np.array([query_words(p.query) for p in pools], dtype=np.float64)
        self.words = np.repeat(words, sizes)
        self.best_bm25 = best[self.query]
        self.evidence = np.array([p.evidence for p in pools], dtype=np.float64)
        self.answerable = self.evidence > 0
        names = np.array([p.dataset for p in pools])
        self.sets = {name: names == name for name in sorted(set(names.tolist()))}

    def scores(self, w: ScoringSettings, gate: float, lexical_pass: float) -> Array:
        """Every candidate's relevance under ``w``; ``-inf`` for one the gate keeps out."""
        semantic = semantic_evidence(self.similarity, self.behind, w)
        knee = query_knee(self.words, w)
        lexical = lexical_evidence(self.bm25, self.best_bm25, self.items, knee)
        own = own_match(semantic, lexical, w.lexical_weight, lead_floor(self.behind, w))
        passes = np.where(
            self.member,
            (self.similarity >= gate) | (lexical >= lexical_pass),
            self.similarity >= gate,
        )
        # A neighbour's evidence counts from gated-in members and every fetched neighbour
        # (retrieval._join_neighbours gates the fetched ones only after matching them).
        visible = np.where(self.member & ~passes, 0.0, own)
        padded = np.append(visible, 0.0)  # index -1 reads the pad: no neighbour
        neighbour = np.maximum(padded[self.left], padded[self.right])
        match = contextual_match(own, neighbour, w.neighbour_share)
        score = combine(match, self.age, self.decay * w.recency_decay, self.usefulness, 1.0, w)
        return np.where(passes, score, -np.inf)

    def modes(self, w: ScoringSettings) -> dict[str, Array]:
        """The other modes ``bench retrieval`` reports, as scores over the same pools:
        ``vector`` (cosine top-k), ``text`` (BM25 top-k) and ``hybrid`` (both halves ranked
        by their own match under ``w``: no gate, neighbours, recency or threshold)."""
        semantic = semantic_evidence(self.similarity, self.behind, w)
        knee = query_knee(self.words, w)
        lexical = lexical_evidence(self.bm25, self.best_bm25, self.items, knee)
        missing = -np.inf
        return {
            "vector": np.where(self.member, self.similarity, missing),
            "text": np.where(self.member & (self.bm25 > 0), self.bm25, missing),
            "hybrid": np.where(
                self.member, own_match(semantic, lexical, w.lexical_weight), missing
            ),
        }

    def order(self, score: Array) -> Ints:
        """Candidate indices grouped by query, each query's best first (stable)."""
        return np.lexsort((-score, self.query)).astype(np.int64)

    def graded(
        self,
        score: Array,
        *,
        k: int = K,
        min_score: float = -np.inf,
        relative: float = 0.0,
        budget: int | None = None,
    ) -> Graded:
        """Grade the top ``k`` of each query after a score floor, a floor relative to the
        query's best (``relative``·best) and a token budget (kept while the running total
        fits: the engine skips an item that does not fit and goes on; close enough here)."""
        order = self.order(score)
        q = self.query[order]
        s = score[order]
        best = np.full(len(self.pools), -np.inf)
        np.maximum.at(best, q, s)
        with np.errstate(invalid="ignore"):  # -inf · 0 for a query with nothing gated in
            keep = np.isfinite(s) & (s >= min_score) & (s >= relative * best[q])
        # Rank among the kept ones only.
        kept_rank = _segment_cumsum(keep.astype(np.int64), q) - 1
        keep &= kept_rank < k
        if budget is not None:
            spent = _segment_cumsum(np.where(keep, self.tokens[order], 0), q)
            keep &= spent <= budget
            kept_rank = _segment_cumsum(keep.astype(np.int64), q) - 1
        n = len(self.pools)
        returned = np.bincount(q[keep], minlength=n).astype(np.float64)
        g = self.group[order]
        hit = keep & (g >= 0)
        pairs = np.unique(q[hit] * 100_000 + g[hit])
        found = np.bincount(pairs // 100_000, minlength=n).astype(np.float64)
        recall = np.where(self.answerable, found / np.maximum(self.evidence, 1), 1.0)
        first = np.full(n, np.inf)
        np.minimum.at(first, q[hit], kept_rank[hit].astype(np.float64))
        rr = np.where(first < 10, 1.0 / (first + 1), 0.0)
        wrong = np.bincount(q[keep & (g < 0)], minlength=n).astype(np.float64)
        return Graded(
            recall, rr, (first < 1).astype(float), (first < 3).astype(float), returned, wrong
        )


def _segment_cumsum(values: Ints, segment: Ints) -> Ints:
    """Running sum of ``values`` that restarts where ``segment`` changes (sorted)."""
    total = np.cumsum(values)
    starts = np.flatnonzero(np.r_[True, segment[1:] != segment[:-1]])
    before = np.r_[0, total[starts[1:] - 1]]  # the total before each segment
    lengths = np.diff(np.r_[starts, len(values)])
    running: Ints = total - np.repeat(before, lengths)
    return running
