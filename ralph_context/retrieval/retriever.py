"""The retrieval ladder: semantic (hybrid) → text → none, each rung scored the same way.

Semantic rung: embed the query, then ask the store for vector top-k·N and full-text top-k·N
side by side and pool them. Full-text hits matter when an exact token (an error code, a file
name) is diluted in the embedding or fell just outside the approximate index's probes; every
pooled item gets its exact cosine similarity. Candidates less similar than
``retrieval.min_similarity`` are not considered. The rest are scored by the relevance formula
(scoring actor), cut at ``min_score`` and fitted to the token budget.

Text rung (no model, or the semantic rung failed): BM25's evidence alone in place of cosine
(the breakdown calls it ``lexical``).

On both rungs, the items stored right before and after the best full-text hits (same source
and iteration) join the pool, and each candidate's best neighbour's match counts towards its
own (``scoring.neighbour_share``). An answer rarely repeats its question's words: on LoCoMo
the turn after the best match is often the evidence, and this lifts recall@10 by ~7 points.
A fetched neighbour joins only if it passes the gate itself (see ``_join_neighbours``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

import anyio

from ralph_context._logging import get_logger
from ralph_context.actors.embedding import EmbeddingActor, EmbedRequest
from ralph_context.actors.storage.actor import Adjacent, StorageActor, TextHit, VectorHit
from ralph_context.arguments import Query
from ralph_context.config import Settings
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import ActorUnavailable, StoreError
from ralph_context.models import ContextItem, RetrievalResult, RetrievedItem, Tier
from ralph_context.retrieval.archive import archive_hits, archived_candidates
from ralph_context.retrieval.candidate_pool import (
    CANDIDATE_FACTOR,
    LEXICAL_FACTOR,
    NEIGHBOUR_SEEDS,
    POOL_ITEMS_AT_LEAST,
    Candidates,
    lexical_scores,
    passes_gate,
    pool_of,
    ranked_behind,
    with_neighbour_match,
)
from ralph_context.retrieval.scoring import Candidate, Ranking, Scored, item_tokens, rank
from ralph_context.retrieval.scoring_actor import ScoringActor
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.threads import place

# Re-exported: evaluations name the pool's parts from here, beside the Retriever using them.
__all__ = [
    "CANDIDATE_FACTOR",
    "LEXICAL_FACTOR",
    "Candidates",
    "Query",
    "Retriever",
    "passes_gate",
    "with_neighbour_match",
]

log = get_logger("ralph_context.retrieval")


@dataclass(frozen=True)
class _Halves:
    """What :meth:`Retriever._halves` found: the query vector, the vector hits, the
    full-text hits, the neighbours of the best full-text hits, the embedding time, and the
    archive's hits when the vector half found nothing similar enough to trust alone."""

    vector: Vectors
    vector_hits: list[VectorHit]
    text_hits: list[TextHit]
    adjacent: list[Adjacent]
    embed_ms: float
    archived: list[VectorHit]


class Retriever:
    """Serves queries from whichever rung works; never raises for a failing part.

    Args:
        settings: Engine settings (weights, similarity gate, timeouts).
        embedding, storage, scoring: The actors; ``clock`` gives the current iteration.
        semantic_unavailable: Why the semantic rung cannot be tried now, or ``None``.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        embedding: EmbeddingActor,
        storage: StorageActor,
        scoring: ScoringActor | None,
        clock: Callable[[], int],
        semantic_unavailable: Callable[[], str | None],
    ) -> None:
        self.settings = settings
        self.embedding = embedding
        self.storage = storage
        self.scoring = scoring
        self.clock = clock
        self.semantic_unavailable = semantic_unavailable

    async def search(self, query: Query) -> RetrievalResult:
        """The best items for ``query``, from the best rung that answers."""
        reason = self.semantic_unavailable()
        if reason is None:
            try:
                return await self._semantic(query)
            except (ActorUnavailable, StoreError) as exc:
                reason = f"semantic search failed: {exc}"
        log.info("search_degraded", tier=Tier.TEXT.value, reason=reason)
        try:
            return await self._text(query, reason)
        except (ActorUnavailable, StoreError) as exc:
            reason = f"{reason}; text search failed: {exc}"
            log.warning("search_degraded", tier=Tier.NONE.value, reason=reason)
            return RetrievalResult(
                tier=Tier.NONE, degraded_reason=reason, token_budget=query.max_tokens
            )

    async def candidates(
        self, text: str, limit: int, where: ItemFilter, text_limit: int | None = None
    ) -> Candidates:
        """Vector top-``limit`` and full-text top-``text_limit`` (default ``limit``) for
        ``text``, and the neighbours of the pool, unscored.

        Raises:
            ActorUnavailable, StoreError: The model or the store cannot answer (no ladder
                here: this is the semantic rung itself, for evaluation).
        """
        reason = self.semantic_unavailable()
        if reason is not None:
            raise ActorUnavailable(reason)
        halves = await self._halves(
            text, limit, limit if text_limit is None else text_limit, where, NEIGHBOUR_SEEDS, 0
        )
        pool = self._pool(halves, text)
        gate = self.settings.retrieval.min_similarity
        passing = [c for c in pool if passes_gate(c, gate)]
        members = {c.item.id for c in pool}
        expanded = self._join_neighbours(passing, halves.adjacent, probe=halves.vector, among=pool)
        return Candidates(
            semantic=[(item, similarity) for item, similarity, _ in halves.vector_hits],
            lexical=[(item, score) for item, score, _ in halves.text_hits],
            pool=pool,
            neighbours=[c for c in expanded if c.item.id not in members],
        )

    async def _semantic(self, query: Query) -> RetrievalResult:
        started = time.perf_counter()
        depth = max(query.max_items, POOL_ITEMS_AT_LEAST)
        halves = await self._halves(
            query.text,
            depth * CANDIDATE_FACTOR,
            depth * LEXICAL_FACTOR,
            query.where,
            self._seeds(depth),
            query.max_items,
        )
        pool = self._pool(halves, query.text)
        below = self.settings.retrieval.archive_search_below
        pool += archived_candidates(pool, halves.archived, below)
        gate = self.settings.retrieval.min_similarity
        passing = [c for c in pool if passes_gate(c, gate)]  # then neighbours join
        joined = self._join_neighbours(passing, halves.adjacent, probe=halves.vector, among=pool)
        ranking = await self._rank(joined, query, match="semantic")
        finished = time.perf_counter()
        return await self._result(
            query,
            ranking,
            candidates=len(pool) + len(joined) - len(passing),
            gated=len(pool) - len(passing),
            tier=Tier.SEMANTIC,
            reason=None,
            embed_ms=halves.embed_ms,
            search_ms=(finished - started) * 1000 - halves.embed_ms,
        )

    def _pool(self, halves: _Halves, text: str) -> list[Candidate]:
        return pool_of(
            halves.vector,
            halves.vector_hits,
            halves.text_hits,
            rows=self.storage.searched_rows,
            weights=self.settings.scoring,
            text=text,
        )

    async def _halves(
        self,
        text: str,
        vector_limit: int,
        text_limit: int,
        where: ItemFilter,
        seeds: int,
        archive_limit: int,
    ) -> _Halves:
        """Both halves of the semantic rung, side by side: the full-text half (then the
        neighbours of its best ``seeds`` threaded hits) needs no query vector, so it runs
        while the query is embedded and the vector half searched. A failed full-text half
        (a query of only stop words, a damaged FTS index) costs only its hits. When the
        vector half's best is weak, the archive's top ``archive_limit`` are searched right
        after it, still beside the full-text half (after both, it added ~10 ms to a search
        during a mass archive at 100k).

        Raises:
            ActorUnavailable, StoreError: The query could not be embedded or the vector half
                failed (the caller steps down to the text rung).
        """
        text_hits: list[TextHit] = []
        adjacent: list[Adjacent] = []

        async def lexical() -> None:
            try:
                text_hits.extend(await self.storage.text_search(text, text_limit, where))
                threaded = [item for item, _, _ in text_hits if place(item)][:seeds]
                if threaded:
                    adjacent.extend(await self.storage.neighbours(threaded, where))
            except (ActorUnavailable, StoreError) as exc:
                log.warning("text_half_failed", error=str(exc))

        failure: ActorUnavailable | StoreError | None = None
        vector_hits: list[VectorHit] = []
        archived: list[VectorHit] = []
        vector: Vectors | None = None
        embed_ms = 0.0
        async with anyio.create_task_group() as group:
            group.start_soon(lexical)
            started = time.perf_counter()
            try:
                vector = await self._embed_query(text)
                embed_ms = (time.perf_counter() - started) * 1000
                vector_hits = await self.storage.vector_search(vector, vector_limit, where)
                best = max((similarity for _, similarity, _ in vector_hits), default=-1.0)
                below = self.settings.retrieval.archive_search_below
                archived = await archive_hits(
                    self.storage, vector, best, archive_limit, where, below
                )
            except (ActorUnavailable, StoreError) as exc:
                # Raised after the group: inside, it would arrive as an ExceptionGroup.
                failure = exc
                group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        assert vector is not None
        return _Halves(vector, vector_hits, text_hits, adjacent, embed_ms, archived)

    async def _text(self, query: Query, reason: str | None) -> RetrievalResult:
        started = time.perf_counter()
        limit = query.max_items * CANDIDATE_FACTOR
        hits = await self.storage.text_search(query.text, limit, query.where)
        scoring, rows = self.settings.scoring, self.storage.searched_rows
        lexical = lexical_scores(hits, rows, scoring, query.text)
        pool = [Candidate(item, lexical[item.id], vector) for item, _, vector in hits]
        threaded = [item for item, _, _ in hits if place(item)][: self._seeds(query.max_items)]
        if threaded:
            fetched = await self.storage.neighbours(threaded, query.where)
            pool = self._join_neighbours(pool, fetched, probe=None, among=pool)
        ranking = await self._rank(pool, query, match="lexical")
        return await self._result(
            query,
            ranking,
            candidates=len(pool),
            gated=0,
            tier=Tier.TEXT,
            reason=reason,
            embed_ms=0.0,
            search_ms=(time.perf_counter() - started) * 1000,
        )

    def _seeds(self, max_items: int) -> int:
        """How many of the best full-text hits get their neighbours fetched."""
        if self.settings.scoring.neighbour_share <= 0:
            return 0
        return min(max_items, NEIGHBOUR_SEEDS)

    def _join_neighbours(
        self,
        pool: list[Candidate],
        fetched: Sequence[Adjacent],
        *,
        probe: Vectors | None,
        among: Sequence[Candidate],
    ) -> list[Candidate]:
        """``pool`` plus the ``fetched`` neighbours, each with its best neighbour's match.

        ``probe`` is the query vector (semantic rung: a fetched neighbour's similarity is its
        cosine); ``None`` on the text rung, where a neighbour not found by BM25 matches 0.
        A fetched neighbour joins only if it passes the similarity gate itself: an unrelated
        item stored next to a strong match (two notes stored one after the other) must not
        ride on it. On LoCoMo this costs no recall (the answers pass the gate). A fetched
        neighbour's cosine is measured against the best of ``among``, the query's whole pool.
        """
        if self.settings.scoring.neighbour_share <= 0:
            return pool
        # The whole pool, not only what passed: a member the gate turned away does not come
        # back as a neighbour (with no lexical part) to lend its match to the one beside it.
        known = {c.item.id for c in (*pool, *among)}
        extra = [
            Candidate(
                item,
                float(vector @ probe) if probe is not None and vector is not None else 0.0,
                vector,
                0.0 if probe is not None else None,
            )
            for item, vector in fetched
            if item.id not in known and (probe is None or vector is not None)
        ]
        if probe is not None:
            extra = ranked_behind(extra, among)
        scored = with_neighbour_match(
            [*pool, *extra], self.settings.scoring, text_tier=probe is None
        )
        gate = self.settings.retrieval.min_similarity
        return scored[: len(pool)] + [c for c in scored[len(pool) :] if passes_gate(c, gate)]

    async def _rank(self, pool: Sequence[Candidate], query: Query, *, match: str) -> Ranking:
        now = self.clock()
        if self.scoring is not None:
            try:
                return await self.scoring.rank(
                    pool,
                    now=now,
                    requested=query.requested,
                    min_score=query.min_score,
                    max_items=query.max_items,
                    max_tokens=query.max_tokens,
                    match=match,
                    relative=query.relative_floor,
                )
            except ActorUnavailable as exc:
                # Same formula, computed here: scoring is pure, so losing the actor costs
                # nothing but its isolation.
                log.warning("scoring_inline", reason=str(exc))
        return rank(
            pool,
            now=now,
            requested=query.requested,
            weights=self.settings.scoring,
            min_score=query.min_score,
            max_items=query.max_items,
            max_tokens=query.max_tokens,
            match=match,
            relative=query.relative_floor,
        )

    async def _result(
        self,
        query: Query,
        ranking: Ranking,
        *,
        candidates: int,
        gated: int,
        tier: Tier,
        reason: str | None,
        embed_ms: float,
        search_ms: float,
    ) -> RetrievalResult:
        noted = self._note_access(ranking.kept) if query.counted else [s.item for s in ranking.kept]
        return RetrievalResult(
            items=tuple(
                RetrievedItem(
                    item=item, score=s.score, breakdown=s.breakdown, tokens=item_tokens(item)
                )
                for s, item in zip(ranking.kept, noted, strict=True)
            ),
            query_embedding_time_ms=embed_ms,
            search_time_ms=search_ms,
            total_candidates=candidates,
            filtered_count=gated + ranking.below_min_score,
            over_budget_count=ranking.over_budget,
            duplicate_count=ranking.duplicates,
            tokens_used=ranking.tokens,
            token_budget=query.max_tokens,
            tier=tier,
            degraded_reason=reason,
        )

    async def _embed_query(self, text: str) -> Vectors:
        timeout = self.settings.embeddings.timeout_seconds
        matrix = await self.embedding.call(EmbedRequest((text,), query=True), timeout=timeout)
        return cast(Vectors, matrix[0])

    def _note_access(self, chosen: Sequence[Scored]) -> list[ContextItem]:
        """Count this retrieval; the items as any later read shows them (counted once more:
        the console's card and its items list agree), or as they were if it was not."""
        items = [s.item for s in chosen]
        if items and not self.storage.record_access([i.id for i in items]):
            log.warning("access_not_recorded", reason="storage actor not taking requests")
            return items
        when = datetime.now(UTC)
        update = [{"access_count": i.access_count + 1, "last_accessed": when} for i in items]
        return [i.model_copy(update=u) for i, u in zip(items, update, strict=True)]
