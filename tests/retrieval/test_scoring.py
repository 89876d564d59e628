"""The relevance formula and the token budget, on hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ralph_context.config import ScoringSettings
from ralph_context.models import ContextItem, ContextType
from ralph_context.retrieval.scoring import (
    Candidate,
    Scored,
    combine,
    estimate_tokens,
    fit_budget,
    item_tokens,
    lead_floor,
    lexical_evidence,
    match_strength,
    own_match,
    query_knee,
    rank,
    recency,
    relevance,
    semantic_evidence,
    type_match,
)
from ralph_context.retrieval.tokens import HEADER_TOKENS
from tests.helpers import unit

# Fixed here, not the defaults (which the fit may move): the hand-computed values below use
# cosine's evidence 1 / (1 + exp(-10·(cosine - 0.5))) (for a candidate not measured against
# the query's best), lexical weight 0.4 and knee 1 (none per word), no first choice's floor,
# neighbour 0.5, floor 0.85, decay 0.1, boost 0.3 and type penalty 0.2.
WEIGHTS = ScoringSettings(
    semantic_midpoint=0.5,
    semantic_slope=10.0,
    semantic_closeness=0.05,
    lexical_knee=1.0,
    lexical_knee_per_word=0.0,
    lexical_weight=0.4,
    semantic_lead_floor=0.0,  # the blend alone; the floor has its own test
    neighbour_share=0.5,
    recency_floor=0.85,
    recency_decay=0.1,
    usefulness_boost=0.3,
    type_penalty=0.2,
)


def sigma(cosine: float) -> float:
    """Cosine's evidence under WEIGHTS, by hand."""
    return 1 / (1 + math.exp(-10 * (cosine - 0.5)))


def item(
    content: str = "x",
    kind: ContextType = ContextType.ERROR,
    iteration: int = 0,
    usefulness: float = 0.5,
) -> ContextItem:
    return ContextItem(
        content=content,
        content_type=kind,
        created_iteration=iteration,
        usefulness_score=usefulness,
    )


def test_recency_decays_towards_its_floor_and_skills_do_not_age() -> None:
    assert recency(0, ContextType.ERROR, WEIGHTS) == 1.0
    assert recency(10, ContextType.ERROR, WEIGHTS) == pytest.approx(0.85 + 0.15 * math.exp(-1.0))
    assert recency(10_000, ContextType.SKILL, WEIGHTS) == 1.0
    assert recency(10_000, ContextType.ERROR, WEIGHTS) == pytest.approx(
        0.85
    )  # never below the floor
    assert recency(-3, ContextType.TASK, WEIGHTS) == 1.0


def test_type_match_is_one_for_requested_types_else_one_minus_the_penalty() -> None:
    assert type_match(ContextType.ERROR, [ContextType.ERROR, ContextType.SKILL], WEIGHTS) == 1.0
    assert type_match(ContextType.FILE, [ContextType.ERROR], WEIGHTS) == pytest.approx(0.8)
    assert type_match(ContextType.FILE, [], WEIGHTS) == 1.0


def test_relevance_is_match_times_recency_feedback_and_type() -> None:
    scored = relevance(
        item(kind=ContextType.ERROR, iteration=2, usefulness=0.6),
        0.8,
        now=7,
        requested=[ContextType.SKILL],
        weights=WEIGHTS,
    )
    recent = 0.85 + 0.15 * math.exp(-0.5)
    feedback = 1 + 0.3 * (2 * 0.6 - 1)
    assert scored.score == pytest.approx(sigma(0.8) * recent * feedback * 0.8)
    assert scored.breakdown == pytest.approx(
        {
            "semantic": 0.8,
            "neighbour": 0.0,
            "match": sigma(0.8),
            "recency": recent,
            "usefulness": 0.6,
            "feedback": feedback,
            "type_match": 0.8,
        }
    )


def test_semantic_tier_weighs_cosines_evidence_against_bm25s() -> None:
    scored = relevance(item(), 0.5, now=0, requested=[], weights=WEIGHTS, lexical=1.0)
    assert scored.score == pytest.approx(0.6 * sigma(0.5) + 0.4 * 1.0)  # lexical_weight 0.4
    assert scored.breakdown["semantic"] == 0.5 and scored.breakdown["lexical"] == 1.0
    # Found by the vector half only: lexical 0 pulls the match down, by the weight.
    unmatched = relevance(item(), 0.5, now=0, requested=[], weights=WEIGHTS, lexical=0.0)
    assert scored.score - unmatched.score == pytest.approx(0.4)
    # Not searched by a full-text half at all (the archive): cosine's evidence alone.
    archived = relevance(item(), 0.5, now=0, requested=[], weights=WEIGHTS)
    assert archived.score == pytest.approx(sigma(0.5))
    assert match_strength(0.5, 7.0, WEIGHTS) == pytest.approx(0.6 * sigma(0.5) + 0.4)  # clamped


def test_the_models_first_choice_keeps_its_floor_against_a_decoys_common_word() -> None:
    # A question asked in other words: its answer is the model's first choice (cosine 0.32,
    # nothing ahead) and shares no word; a decoy 0.02 behind shares one common word.
    w = WEIGHTS.model_copy(
        update={"semantic_midpoint": 0.3, "semantic_closeness": 0.02, "lexical_weight": 0.6}
    )
    assert w.semantic_lead_floor == 0.0
    answer = Candidate(item("the answer, in other words"), 0.32, lexical=0.0, behind=0.0)
    decoy = Candidate(item("a decoy sharing a word"), 0.30, lexical=0.35, behind=0.02)
    full = Candidate(item("every rare word of the question"), 0.30, lexical=1.0, behind=0.02)

    def order(weights: ScoringSettings, *found: Candidate) -> list[str]:
        ranking = rank(
            found,
            now=0,
            requested=[],
            weights=weights,
            min_score=0.0,
            max_items=5,
            max_tokens=10_000,
        )
        return [s.item.content for s in ranking.kept]

    # Without the floor the common word outweighs the clear semantic lead ...
    assert order(w, answer, decoy)[0] == "a decoy sharing a word"
    # ... with it the model's first choice stays first, at the floor.
    floored = w.model_copy(update={"semantic_lead_floor": 0.6})
    assert order(floored, answer, decoy)[0] == "the answer, in other words"
    assert match_strength(0.32, 0.0, floored, behind=0.0) == pytest.approx(0.6)
    # The floor fades with the distance behind the best, so the decoy's match is its blend.
    blend = 0.4 * semantic_evidence(0.30, 0.02, floored) + 0.6 * 0.35
    assert match_strength(0.30, 0.35, floored, behind=0.02) == pytest.approx(blend)
    assert lead_floor(0.02, floored) == pytest.approx(0.6 * math.exp(-1))
    assert lead_floor(0.02, floored) < blend
    # A candidate holding every rare word of the question still beats the floor.
    assert order(floored, answer, full)[0] == "every rare word of the question"
    # The floor is for an item sharing no word: one that shares some is its blend alone,
    # first choice or not (an older decision must not outrank its replacement by it).
    sharing = 0.4 * semantic_evidence(0.32, 0.0, floored) + 0.6 * 0.1
    assert match_strength(0.32, 0.1, floored, behind=0.0) == pytest.approx(sharing)
    assert sharing < 0.6
    # Off (0) is the blend alone; the arrays the fit scores give what one candidate gets.
    assert lead_floor(0.0, w) == 0.0
    behind = np.array([0.0, 0.02, 0.2])
    lexical = np.array([0.0, 0.35, 1.0])
    cosine = np.array([0.32, 0.30, 0.12])
    arrays = own_match(
        semantic_evidence(cosine, behind, floored), lexical, 0.6, lead_floor(behind, floored)
    )
    singles = [
        match_strength(float(c), float(x), floored, behind=float(b))
        for c, x, b in zip(cosine, lexical, behind, strict=True)
    ]
    assert arrays == pytest.approx(singles)


def test_cosines_evidence_is_a_logistic_curve_around_its_midpoint() -> None:
    far = math.inf  # not measured against the query's best
    assert semantic_evidence(0.5, far, WEIGHTS) == pytest.approx(0.5)
    assert semantic_evidence(0.8, far, WEIGHTS) == pytest.approx(sigma(0.8))
    assert semantic_evidence(0.0, far, WEIGHTS) < 0.01 < 0.99 < semantic_evidence(1.0, far, WEIGHTS)


def test_the_models_own_first_choice_is_strong_evidence_whatever_its_cosine() -> None:
    w = WEIGHTS.model_copy(update={"semantic_closeness": 0.02})
    # A low cosine (0.3) that is the best of the query's candidates...
    first = semantic_evidence(0.3, 0.0, w)
    assert first == pytest.approx(1.0)
    # ... outweighs a higher absolute cosine that others beat by 0.1.
    assert first > semantic_evidence(0.45, 0.1, w)
    # A near tie keeps much of it, one 0.02 behind keeps 1/e of it (or-ed with the curve).
    assert semantic_evidence(0.28, 0.02, w) == pytest.approx(
        1 - (1 - sigma(0.28)) * (1 - math.exp(-1.0))
    )
    # A candidate ahead of the pool's best (a fetched neighbour) counts as the best, no more.
    assert semantic_evidence(0.3, -0.05, w) == pytest.approx(1.0)


def test_a_longer_query_has_a_higher_knee() -> None:
    w = WEIGHTS.model_copy(update={"lexical_knee": 1.0, "lexical_knee_per_word": 0.2})
    assert query_knee(0.0, w) == pytest.approx(1.0)
    assert query_knee(10.0, w) == pytest.approx(3.0)
    rare = math.log(1 + 99.5 / 1.5)
    # One rare word shared with a three-word question weighs more than with a ten-word one.
    short = lexical_evidence(rare, rare, 100.0, query_knee(3.0, w))
    long = lexical_evidence(rare, rare, 100.0, query_knee(10.0, w))
    assert short == pytest.approx(1 / 2.6) and long == pytest.approx(1 / 4)


def test_bm25s_evidence_counts_the_best_hit_fully_only_when_it_holds_several_rare_words() -> None:
    rare = math.log(1 + 99.5 / 1.5)  # BM25's weight of a word found in 1 item of 100
    # The best hit holding one rare word: 1 / (1 + knee), whatever the store's size.
    assert lexical_evidence(rare, rare, 100.0, 1.0) == pytest.approx(0.5)
    # Holding five: near 1, as dividing by the best hit gave.
    assert lexical_evidence(5 * rare, 5 * rare, 100.0, 1.0) == pytest.approx(5 / 6)
    # One common word (a tenth of the weight), best of a query where nothing shares more:
    # the former normalisation gave it 1.0, a whole lexical share.
    assert lexical_evidence(rare / 10, rare / 10, 100.0, 1.0) == pytest.approx(1 / 11)
    # Below the best hit, in proportion.
    assert lexical_evidence(rare, 2 * rare, 100.0, 1.0) == pytest.approx(1 / 3)
    assert lexical_evidence(-1.0, rare, 100.0, 1.0) == 0.0


def test_a_neighbours_match_adds_as_a_noisy_or_and_never_passes_one() -> None:
    alone = relevance(item(), 0.3, now=0, requested=[], weights=WEIGHTS)
    helped = relevance(item(), 0.3, now=0, requested=[], weights=WEIGHTS, neighbour=0.8)
    assert helped.score == pytest.approx(1 - (1 - sigma(0.3)) * (1 - 0.5 * 0.8))
    assert helped.breakdown["neighbour"] == 0.8 and alone.breakdown["neighbour"] == 0.0
    perfect = relevance(item(), 1.0, now=0, requested=[], weights=WEIGHTS, neighbour=1.0)
    assert perfect.score <= 1.0
    assert perfect.score == pytest.approx(1 - (1 - sigma(1.0)) * (1 - 0.5))


def test_an_old_strong_match_stays_above_a_fresh_loose_one() -> None:
    # The former weighted sum put the fresh loose match first (0.25 of recency outweighed
    # a 0.3 difference in similarity); the loop's signals now only scale the match.
    old = relevance(item(iteration=0), 0.75, now=200, requested=[], weights=WEIGHTS)
    fresh = relevance(item(iteration=200), 0.45, now=200, requested=[], weights=WEIGHTS)
    assert old.score > fresh.score
    # ... but between comparably relevant items, the newer one wins.
    newer = relevance(item(iteration=190), 0.70, now=200, requested=[], weights=WEIGHTS)
    older = relevance(item(iteration=120), 0.72, now=200, requested=[], weights=WEIGHTS)
    assert newer.score > older.score


def test_a_negative_similarity_is_no_evidence() -> None:
    scored = relevance(item(), -0.3, now=0, requested=[], weights=WEIGHTS)
    assert scored.breakdown["semantic"] == 0.0
    assert scored.score == pytest.approx(0.0, abs=1e-3)


def test_feedback_can_reorder_two_equally_similar_items() -> None:
    liked = relevance(item(usefulness=0.9), 0.5, now=0, requested=[], weights=WEIGHTS)
    disliked = relevance(item(usefulness=0.1), 0.5, now=0, requested=[], weights=WEIGHTS)
    assert liked.score == pytest.approx(0.5 * (1 + 0.3 * 0.8))
    assert disliked.score == pytest.approx(0.5 * (1 - 0.3 * 0.8))


def test_combine_scores_arrays_exactly_as_relevance_scores_one_item() -> None:
    w = ScoringSettings()  # the defaults, whatever they are
    rows = [(0.2, 0, 0.5), (0.6, 12, 0.9), (0.9, 40, 0.1), (0.4, 3, 0.5)]
    one_by_one = [
        relevance(item(iteration=100 - age, usefulness=u), m, now=100, requested=[], weights=w)
        for m, age, u in rows
    ]
    evidence = semantic_evidence(np.array([r[0] for r in rows]), math.inf, w)
    together = combine(
        evidence,
        np.array([float(r[1]) for r in rows]),
        w.recency_decay,
        np.array([r[2] for r in rows]),
        1.0,
        w,
    )
    assert together.tolist() == pytest.approx([s.score for s in one_by_one])


def test_the_former_additive_weights_are_refused_with_the_new_names() -> None:
    with pytest.raises(ValueError, match=r"recency_weight.*recency_floor"):
        ScoringSettings.model_validate({"recency_weight": 0.25})


def test_the_former_lexical_share_is_refused_with_the_new_names() -> None:
    with pytest.raises(ValueError, match=r"lexical_share.*semantic_midpoint.*lexical_weight"):
        ScoringSettings.model_validate({"lexical_share": 0.6})


def test_token_estimate_is_a_quarter_of_the_characters() -> None:
    assert estimate_tokens("") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 400) == 100


def scored(content: str, score: float, vector: np.ndarray | None = None) -> Scored:
    return Scored(item(content), score, {}, vector)


def test_budget_skips_what_does_not_fit_and_keeps_filling() -> None:
    ranked = [
        scored("a" * 40, 0.9),  # 10 tokens
        scored("b" * 400, 0.8),  # 100 tokens: does not fit after the first
        scored("c" * 20, 0.7),  # 5 tokens
        scored("d" * 24, 0.6),  # 6 tokens: would exceed 20
    ]
    kept = fit_budget(
        ranked, max_items=10, max_tokens=20, cost=lambda i: estimate_tokens(i.content)
    )
    assert [s.item.content[0] for s in kept] == ["a", "c"]
    assert sum(estimate_tokens(s.item.content) for s in kept) <= 20


def test_budget_respects_max_items() -> None:
    ranked = [scored(str(n), 1 - n / 10) for n in range(5)]
    assert len(fit_budget(ranked, max_items=3, max_tokens=1000)) == 3


def test_near_duplicates_of_a_kept_item_are_collapsed() -> None:
    base = unit(1, 0, 0, 0)
    twin = unit(1, 0.05, 0, 0)  # cosine ~0.9988 with base
    other = unit(0.6, 0.8, 0, 0)  # cosine 0.6
    ranked = [scored("first", 0.9, base), scored("twin", 0.8, twin), scored("other", 0.7, other)]
    kept = fit_budget(ranked, max_items=10, max_tokens=1000)
    assert [s.item.content for s in kept] == ["first", "other"]


def test_item_cost_includes_the_injected_header() -> None:
    assert item_tokens(item("a" * 40)) == 10 + HEADER_TOKENS


def test_rank_orders_by_relevance_and_counts_what_each_rule_dropped() -> None:
    fresh = item("fresh and relevant", iteration=10)
    stale = item("stale but relevant", iteration=0)
    weak = item("weak match", iteration=10, usefulness=0.0)
    long = item("z" * 4000, iteration=10)  # 1,006 tokens with its header
    twin_vector = unit(1, 0.01, 0, 0)
    twin = item("fresh and relevant, again", iteration=10)
    ranking = rank(
        [
            Candidate(stale, 0.6, unit(0, 1, 0, 0)),
            Candidate(fresh, 0.55, unit(1, 0, 0, 0)),
            Candidate(twin, 0.549, twin_vector),
            Candidate(long, 0.58, unit(0, 0, 1, 0)),
            Candidate(weak, 0.0, unit(0, 0, 0, 1)),
        ],
        now=10,
        requested=[],
        weights=WEIGHTS,
        min_score=0.45,
        max_items=10,
        max_tokens=200,
    )
    # long scores highest (.690) but is over budget; stale .731 x recency .905 = .662 stays
    # above fresh .622 (10 iterations cost at most 15%); twin duplicates fresh
    assert [s.item.id for s in ranking.kept] == [stale.id, fresh.id]
    assert ranking.below_min_score == 1  # weak: no match at all scores 0
    assert ranking.duplicates == 1  # twin
    assert ranking.over_budget == 1  # long
    assert ranking.tokens == item_tokens(fresh) + item_tokens(stale) <= 200


def test_text_tier_breakdown_names_its_match_lexical() -> None:
    ranking = rank(
        [Candidate(item("x"), 1.0)],
        now=0,
        requested=[],
        weights=WEIGHTS,
        min_score=0.0,
        max_items=1,
        max_tokens=100,
        match="lexical",
    )
    assert set(ranking.kept[0].breakdown) == {
        "lexical",
        "neighbour",
        "match",
        "recency",
        "usefulness",
        "feedback",
        "type_match",
    }


def test_the_former_standout_settings_are_refused_with_the_new_name() -> None:
    with pytest.raises(ValueError, match=r"standout_midpoint.*semantic_closeness"):
        ScoringSettings.model_validate({"standout_midpoint": 2.0})
    with pytest.raises(ValueError, match=r"standout_slope.*semantic_closeness"):
        ScoringSettings.model_validate({"standout_slope": 4.0})
