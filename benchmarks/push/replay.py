"""What the prompt hook's search serves, replayed from saved candidate pools.

LongMemEval's haystacks take ~40 s a question to fill on a quiet 2-core machine (minutes
under load), and ``bench retrieval`` on its file already saves every question's candidate
pool (``benchmarks/retrieval/pools.py``: the raw cosine, BM25, neighbours and token costs
of what ``Engine.search`` chooses from). The pools are ranked here as the engine ranks them
(``grading.Flat``, held to ``Engine.search`` by its own test), cut at the default
threshold, and fitted to the hook's budget as ``retrieval/budget.py`` fits them (an item
that does not fit is skipped; near-duplicates are not dropped: a pool keeps no vectors).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from benchmarks.push.asked import Asked, Served
from benchmarks.retrieval.grading import Flat
from benchmarks.retrieval.pools import Pool
from ralph_context.config import Settings
from ralph_context.retrieval.candidate_pool import LEXICAL_PASS
from ralph_context.retrieval.scoring import lexical_evidence, query_knee

__all__ = ["served_from_pools"]


def served_from_pools(
    pools: Sequence[Pool], settings: Settings, *, max_tokens: int, kind: str = "longmemeval"
) -> list[Asked]:
    """Each pool's served items under ``settings``, within ``max_tokens``; a pool with no
    answer group is a no-answer prompt (``abstention``)."""
    if not pools:
        return []
    flat = Flat(pools)
    w, r = settings.scoring, settings.retrieval
    scores = flat.scores(w, r.min_similarity, LEXICAL_PASS)
    knee = query_knee(flat.words, w)
    lexical = lexical_evidence(flat.bm25, flat.best_bm25, flat.items, knee)
    asked = []
    for index, pool in enumerate(pools):
        start = int(flat.start[index])
        mine = scores[start : start + len(pool.similarity)]
        answers = set().union(*pool.labels) if pool.labels else set()
        items = []
        floors = (r.min_relevance_score, r.min_relative_score)
        for i in _kept(mine, pool, floors, r.max_items_per_query, max_tokens):
            breakdown = {"semantic": float(np.clip(pool.similarity[i], 0.0, 1.0))}
            if pool.member[i]:  # a fetched neighbour has no full-text part
                breakdown["lexical"] = float(np.clip(lexical[start + i], 0.0, 1.0))
            items.append(Served(float(mine[i]), breakdown, i in answers))
        answerable = pool.evidence > 0
        category = "answerable" if answerable else "abstention"
        asked.append(Asked(kind, pool.group, category, answerable, pool.query, tuple(items)))
    return asked


def _kept(
    scores: NDArray[np.float64],
    pool: Pool,
    floors: tuple[float, float],
    max_items: int,
    max_tokens: int,
) -> list[int]:
    """Indices the engine serves: best first (ties in the pool's order), at or above the
    score floor and the share of the best (``floors``), at most ``max_items``, within the
    budget."""
    finite = np.isfinite(scores)
    if not finite.any():
        return []
    floor = max(floors[0], floors[1] * float(scores[finite].max()))
    order = sorted((i for i in range(len(scores)) if finite[i]), key=lambda i: -scores[i])
    kept: list[int] = []
    spent = 0
    for i in order:
        if scores[i] < floor or len(kept) >= max_items:
            break
        price = int(pool.tokens[i])
        if spent + price > max_tokens:
            continue
        kept.append(i)
        spent += price
    return kept
