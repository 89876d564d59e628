"""``retrieval:`` and ``scoring:``: what a query returns, and how relevance ranks it."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from pydantic import Field, model_validator

from ralph_context.config.section import Section
from ralph_context.models import ContextType

__all__ = ["PUSH_GATES", "Face", "PushGate", "PushGates", "RetrievalSettings", "ScoringSettings"]


class PushGate(Section):
    """What an item must show to be pushed into a prompt nobody asked memory about
    (``retrieval/gate.py``): ``cosine + lexical_weight · lexical >= min_evidence``, or on the
    text tier (no cosine) ``lexical >= min_lexical``; ``lexical`` is BM25's evidence."""

    min_evidence: float = Field(ge=-1.0, le=3.0, allow_inf_nan=False)
    lexical_weight: float = Field(ge=0.0, le=2.0, allow_inf_nan=False)
    min_lexical: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)


class PushGates(Section):
    """One embedding model's gates, per kind of push (``None``: that push is not gated)."""

    # A person's prompt: the agents' UserPromptSubmit hook.
    prompt: PushGate | None = None
    # A loop's own state (its task, step and last output): Ralph 1.x's section, Ralph v2's
    # memories.md.
    loop: PushGate | None = None


# What a push is: a person's prompt, or a loop's own state.
Face = Literal["prompt", "loop"]

# One gate per embedding model (embeddings.model): a cosine's scale is the model's own, so a
# model's constants are fitted on its own vectors (`ralph-context bench push` with that
# model configured prints the choice, held out by project, conversation and question;
# docs/benchmarks.md#the-push-gate). A model not listed here has no gate: its pushes carry
# what passes the pull threshold, as before the gate, until its line is added.
# all-MiniLM-L6-v2 gates no loop: a loop's query is its task and last output, and the
# facts a step needs sit at the evidence of noise there; with the prompt's gate, bench ab's
# loops saved 0-11% of iterations against 20-32% ungated (2 runs per task, the same hour).
PUSH_GATES: Mapping[str, PushGates] = MappingProxyType(
    {
        "all-MiniLM-L6-v2": PushGates(
            prompt=PushGate(min_evidence=0.6, lexical_weight=0.25, min_lexical=0.5)
        ),
        # Issue 61, fitted on the everyday and paraphrase prompts only (no LoCoMo or
        # LongMemEval run with this model yet; benchmarks/push/results-mpnet): held out,
        # silence 0.82 on everyday prompts no note answers (0.23 ungated), their answers
        # pushed for 1.0 of related prompts and for 0.39 of paraphrased questions (MiniLM's
        # gate: 0.0), precision 0.19.
        "all-mpnet-base-v2": PushGates(
            prompt=PushGate(min_evidence=0.375, lexical_weight=0.25, min_lexical=0.55)
        ),
    }
)


class RetrievalSettings(Section):
    """Defaults for a query."""

    max_items_per_query: int = Field(default=10, ge=1, le=50)
    # Relevance is on the match's scale (retrieval/scoring.py): with no shared word, half of
    # cosine's evidence; an item with cosine 0.3 (a paraphrase, as MiniLM measures one) reaches
    # 0.25.
    min_relevance_score: float = Field(default=0.12, ge=0.0, le=1.0, allow_inf_nan=False)
    # ... and under this share of the query's best score: when a clear match is there, the
    # loosely related tail goes. Both chosen by benchmarks/retrieval/fit.py (README:
    # Relevance); a min_score given with a query replaces both.
    min_relative_score: float = Field(default=0.2, ge=0.0, le=1.0, allow_inf_nan=False)
    # The gate before scoring: candidates must first be at least this similar to the query
    # (or hold its rarer words). MiniLM puts unrelated English sentences at ~0.0-0.15 and a
    # question asked in other words than its answer at 0.25-0.5 (0.12-0.32 for the hardest
    # of the paraphrase set, so the fit lowered it from 0.2).
    min_similarity: float = Field(default=0.15, ge=-1.0, le=1.0, allow_inf_nan=False)
    context_types: tuple[ContextType, ...] = (
        ContextType.SKILL,
        ContextType.ERROR,
        ContextType.ITERATION,
    )
    max_context_tokens: int = Field(default=4000, ge=1)
    # When no live candidate is at least this similar (cosine) to the query, archived items
    # are searched too: an old item that is the strong match stays findable after the
    # lifecycle moved it out of the hot table. 1.0: always; below the gate: never.
    archive_search_below: float = Field(default=0.5, ge=-1.0, le=1.0, allow_inf_nan=False)
    # What a push carries besides the threshold above: "auto", the items that pass the
    # embedding model's own gate (PUSH_GATES; a prompt nothing answers gets nothing); "off",
    # all of them; or a gate's constants. push_gate: a person's prompt (the agents' prompt
    # hook); loop_push_gate: a loop's own state (Ralph 1.x's section, Ralph v2's
    # memories.md; all-MiniLM-L6-v2 has no loop gate). Pulls (tools, search) are not gated.
    push_gate: Literal["auto", "off"] | PushGate = "auto"
    loop_push_gate: Literal["auto", "off"] | PushGate = "auto"


class ScoringSettings(Section):
    """How relevance combines match, recency, feedback and type (see ``retrieval/scoring.py``).

    relevance = match · recency · feedback · type, where only ``match`` can reach 0: the
    loop's own signals scale a match (within a band: at most ``1 - recency_floor`` for age,
    ``usefulness_boost`` either way for feedback, ``type_penalty`` for an unrequested type)
    and never lift an unrelated item above a related one. Defaults are fitted by
    ``benchmarks/retrieval/fit.py`` on LoCoMo and the loop scenarios.
    """

    # Cosine's evidence is the logistic sigma(slope * (cosine - midpoint)): at the midpoint a
    # cosine is even odds that the item answers the query (scoring.semantic_evidence).
    semantic_midpoint: float = Field(default=0.30, ge=-1.0, le=1.0, allow_inf_nan=False)
    semantic_slope: float = Field(default=10.0, gt=0.0, le=100.0, allow_inf_nan=False)
    # ... or-ed with exp(-behind / semantic_closeness), behind = the query's best cosine among
    # its candidates minus this one's: the model's own first choice, whatever its cosine.
    semantic_closeness: float = Field(default=0.02, gt=0.0, le=1.0, allow_inf_nan=False)
    # BM25's evidence is its score over the query's best hit's plus a knee of rare words'
    # worth, lexical_knee + lexical_knee_per_word per content word of the query
    # (scoring.lexical_evidence); the match is (1 - lexical_weight)·cosine's evidence
    # + lexical_weight·BM25's.
    lexical_knee: float = Field(default=1.0, gt=0.0, le=100.0, allow_inf_nan=False)
    lexical_knee_per_word: float = Field(default=0.2, ge=0.0, le=10.0, allow_inf_nan=False)
    lexical_weight: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    # Off by default. When above 0, an item the full-text half did not find (lexical 0) keeps
    # at least this match times exp(-behind / semantic_closeness): the model's first choice
    # for a question asked in other words (scoring.own_match). Fitted, it lifted paraphrase
    # top-1 but let near-duplicate vector hits outrank the one item holding the query's rare
    # identifier ("note 77"), which the fit's sets do not hold (stop 68; issue 61).
    semantic_lead_floor: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    # How much an adjacent item's match (same source and iteration, stored next to it)
    # counts towards this item's: an answer is often the turn after the question.
    neighbour_share: float = Field(default=0.70, ge=0.0, le=1.0, allow_inf_nan=False)
    # Recency decays from 1 towards this floor, at recency_decay per iteration of age
    # (skills do not age: they are meant to outlive the iterations that taught them).
    recency_floor: float = Field(default=0.75, ge=0.0, le=1.0, allow_inf_nan=False)
    recency_decay: float = Field(default=0.05, ge=0.0, le=10.0, allow_inf_nan=False)
    # Feedback multiplies by 1 + usefulness_boost·(2·usefulness - 1): 0.5 (unrated) is 1.
    usefulness_boost: float = Field(default=0.50, ge=0.0, le=1.0, allow_inf_nan=False)
    # Items of a type that was not asked for are multiplied by 1 - type_penalty.
    type_penalty: float = Field(default=0.20, ge=0.0, le=1.0, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_additive_weights(cls, data: object) -> object:
        if isinstance(data, dict):
            if "lexical_share" in data:
                raise ValueError(
                    "lexical_share: cosine and BM25 no longer share the match by fixed parts; "
                    "each is evidence on its own scale (semantic_midpoint, semantic_slope, "
                    "lexical_knee) joined by lexical_weight (README: Relevance)"
                )
            standout = sorted(set(data) & {"standout_midpoint", "standout_slope"})
            if standout:
                raise ValueError(
                    f"{', '.join(standout)}: cosine's relative evidence is no longer its "
                    "standout among the candidates but how close it comes to the best of "
                    "them; use semantic_closeness (docs/mcp.md#relevance)"
                )
            old = sorted(set(data) & _ADDITIVE_WEIGHTS)
            if old:
                raise ValueError(
                    f"{', '.join(old)}: the additive weights are gone "
                    "(relevance = match · recency · feedback · type); use lexical_weight, "
                    "neighbour_share, recency_floor, recency_decay, usefulness_boost and "
                    "type_penalty (README: Relevance)"
                )
        return data


_ADDITIVE_WEIGHTS = frozenset(
    {"semantic_weight", "recency_weight", "usefulness_weight", "type_match_weight"}
)
