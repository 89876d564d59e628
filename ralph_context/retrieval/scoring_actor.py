"""Scoring actor: re-scores search candidates with the relevance formula and fits the budget.

Its own actor so the weights, the clock it scores against and the budget rules live in one
place that every retrieval path (semantic, text) goes through. The work is a few hundred dot
products, so it runs on the event loop; if the actor is down the engine ranks by match alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ralph_context.config import ScoringSettings
from ralph_context.models import ContextType
from ralph_context.retrieval.scoring import Candidate, Ranking, rank
from ralph_context.runtime import Actor

__all__ = ["RankRequest", "ScoringActor"]


@dataclass(frozen=True)
class RankRequest:
    """Candidates of one query and the rules to rank them by."""

    candidates: tuple[Candidate, ...]
    now: int
    requested: tuple[ContextType, ...]
    min_score: float
    max_items: int
    max_tokens: int
    match: str = "semantic"
    relative: float = 0.0


class ScoringActor(Actor[RankRequest, Ranking]):
    """Answers :class:`RankRequest` with a :class:`~ralph_context.retrieval.scoring.Ranking`."""

    def __init__(self, weights: ScoringSettings, *, timeout: float = 10.0) -> None:
        super().__init__("scoring", inbox_size=256)
        self.weights = weights
        self.timeout = timeout

    async def handle(self, request: RankRequest) -> Ranking:
        return rank(
            request.candidates,
            now=request.now,
            requested=request.requested,
            weights=self.weights,
            min_score=request.min_score,
            max_items=request.max_items,
            max_tokens=request.max_tokens,
            match=request.match,
            relative=request.relative,
        )

    async def rank(
        self,
        candidates: Sequence[Candidate],
        *,
        now: int,
        requested: Sequence[ContextType],
        min_score: float,
        max_items: int,
        max_tokens: int,
        match: str = "semantic",
        relative: float = 0.0,
    ) -> Ranking:
        """Typed wrapper over :meth:`call`.

        Raises:
            ActorUnavailable: The actor is down or did not answer in time.
        """
        request = RankRequest(
            tuple(candidates),
            now,
            tuple(requested),
            min_score,
            max_items,
            max_tokens,
            match,
            relative,
        )
        return await self.call(request, timeout=self.timeout)
