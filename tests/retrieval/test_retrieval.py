"""Relevance scoring through the engine: real model, real store, the formula of scoring.py."""

from __future__ import annotations

import math

import anyio
import pytest

from ralph_context import Engine, NewItem
from ralph_context.config import ScoringSettings
from ralph_context.retrieval.retriever import passes_gate
from ralph_context.retrieval.scoring import (
    item_tokens,
    lead_floor,
    query_knee,
    semantic_evidence,
)
from ralph_context.retrieval.words import content_words
from tests.helpers import Loader, SettingsFactory, advance

QUERY = "API server crashes with missing table errors at startup"
# Two phrasings of one lesson (cosine 0.94 with each other, under the 0.95 duplicate line),
# 0.685 and 0.725 similar to QUERY: comparably relevant (6% apart), which one step of
# feedback either way, a type preference or ten iterations of recency each outweigh. Tests of
# those factors turn the BM25 part of the match off (COSINE_ONLY): the twins share QUERY's
# words unevenly.
TWINS = (
    "Run the migrations before starting the API server or it fails on missing tables.",
    "The API server fails at startup on missing tables unless the migrations ran first.",
)
# Related to QUERY (cosine 0.36-0.73), pairwise under 0.95.
LESSONS = (
    *TWINS,
    "Start the API only after running database migrations; otherwise tables are missing.",
    "Apply migrations first when the API reports missing tables.",
    "If tables are missing when the server boots, the schema migration step was skipped.",
    "The users table did not exist, so the API returned 500 on every login request.",
    "Startup crash: relation orders does not exist. Fixed by running alembic upgrade head.",
)
COSINE_ONLY = {"lexical_weight": 0.0}
WEIGHTS = ScoringSettings()


async def test_feedback_reorders_two_equally_relevant_items(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(60):
        settings = make_settings(scoring=COSINE_ONLY)
        async with Engine(settings, model_loader=shared_model) as engine:
            first, second = await engine.store_many([NewItem(t, "skill") for t in TWINS])
            before = [h.item.id for h in (await engine.search(QUERY)).items]
            loser = before[0]
            winner = second.id if loser == first.id else first.id
            await engine.mark_useful(loser, False)
            await engine.mark_useful(winner, True)
            after = await engine.search(QUERY)
    assert set(before) == {first.id, second.id}
    assert [h.item.id for h in after.items] == [winner, loser]
    top = after.items[0].breakdown
    assert top["usefulness"] == pytest.approx(0.6)
    assert after.items[1].breakdown["usefulness"] == pytest.approx(0.35)


async def test_recency_decays_with_the_iteration_clock_and_skills_do_not_age(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(60):
        async with Engine(make_settings(scoring=COSINE_ONLY), model_loader=shared_model) as engine:
            new_error, old_error = await engine.store_many(
                [NewItem(TWINS[0], "error", iteration=9), NewItem(TWINS[1], "error", iteration=0)]
            )
            skill = await engine.store(
                "Apply migrations first when the API reports missing tables.",
                "skill",
                iteration=0,
            )
            await advance(engine, 10)
            result = await engine.search(QUERY, min_score=0.0)
    by_id = {h.item.id: h for h in result.items}
    floor, rate = WEIGHTS.recency_floor, WEIGHTS.recency_decay
    assert by_id[new_error.id].breakdown["recency"] == pytest.approx(
        floor + (1 - floor) * math.exp(-rate)
    )
    assert by_id[old_error.id].breakdown["recency"] == pytest.approx(
        floor + (1 - floor) * math.exp(-10 * rate)
    )
    assert by_id[skill.id].breakdown["recency"] == 1.0  # skills do not age
    # Same lesson, the old phrasing slightly closer to the query: the fresh one wins.
    assert result.items[0].item.id == new_error.id
    assert by_id[new_error.id].score > by_id[old_error.id].score


async def test_type_filter_excludes_and_type_preference_only_reorders(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(60):
        async with Engine(make_settings(scoring=COSINE_ONLY), model_loader=shared_model) as engine:
            error, skill = await engine.store_many(
                [NewItem(TWINS[0], "error"), NewItem(TWINS[1], "skill")]
            )
            only = await engine.search(QUERY, context_types=["skill"])
            preferred_skill = await engine.search(QUERY, prefer_types=["skill"])
            preferred_error = await engine.search(QUERY, prefer_types=["error"])
            neutral = await engine.search(QUERY)
    assert [h.item.id for h in only.items] == [skill.id]
    assert only.items[0].breakdown["type_match"] == 1.0
    assert [h.item.id for h in preferred_skill.items] == [skill.id, error.id]
    assert [h.item.id for h in preferred_error.items] == [error.id, skill.id]
    assert preferred_error.items[1].breakdown["type_match"] == 1 - WEIGHTS.type_penalty
    assert all(h.breakdown["type_match"] == 1.0 for h in neutral.items)


async def test_min_score_applies_to_the_relevance_score(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            await engine.store_many([NewItem(t, "error") for t in TWINS])
            everything = await engine.search(QUERY, min_score=0.0)
            cut = (everything.items[0].score + everything.items[1].score) / 2
            strict = await engine.search(QUERY, min_score=cut)
    assert len(everything.items) == 2
    assert [h.item.id for h in strict.items] == [everything.items[0].item.id]
    assert strict.filtered_count == 1
    assert all(h.score >= cut for h in strict.items)


async def test_unrelated_items_are_gated_even_with_min_score_zero(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            await engine.store("Grandma's apple pie needs two cups of sugar.", "output")
            result = await engine.search(QUERY, min_score=0.0)
    assert result.items == ()
    assert result.total_candidates == 1
    assert result.filtered_count == 1


async def test_the_token_budget_holds_and_near_duplicates_collapse(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    lessons = [f"{text} {text}" for text in LESSONS]
    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            await engine.store_many([NewItem(text, "error") for text in lessons])
            copy = await engine.store(lessons[0], "error")  # exact duplicate of lesson 0
            budget = 3 * item_tokens(copy) + 5
            tight = await engine.search(QUERY, max_tokens=budget, min_score=0.0)
            roomy = await engine.search(QUERY, max_tokens=100_000, min_score=0.0)
    assert len(tight.items) == 3
    assert tight.tokens_used == sum(h.tokens for h in tight.items) <= budget
    assert tight.token_budget == budget
    assert tight.over_budget_count >= 1
    assert roomy.duplicate_count == 1
    assert len(roomy.items) == len(LESSONS)
    contents = [h.item.content for h in roomy.items]
    assert len(contents) == len(set(contents))


async def test_the_match_mixes_cosine_with_bm25_of_the_query_words(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    query = "release broke since DB credentials were out of date"
    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            paraphrase, literal = await engine.store_many(
                [
                    NewItem("The deploy failed because the database password expired.", "error"),
                    NewItem("Staging DB credentials rotate on the first of each month.", "skill"),
                ]
            )
            result = await engine.search(query, min_score=0.0)
    by_id = {hit.item.id: hit for hit in result.items}
    # Only the literal item shares words with the query ("DB", "credentials"): it is the
    # full-text half's best hit, with two of the query's rare words (evidence 2 / (2 + knee),
    # the knee growing with the query's six content words, give or take BM25's length norm);
    # the paraphrase comes from the vector half alone.
    knee = float(query_knee(float(len(content_words(query))), WEIGHTS))
    assert by_id[literal.id].breakdown["lexical"] == pytest.approx(2 / (2 + knee), abs=0.1)
    assert by_id[paraphrase.id].breakdown["lexical"] == 0.0
    for hit in result.items:
        factors = hit.breakdown
        # Two candidates: each measured against the closer one's cosine.
        closest = max(h.breakdown["semantic"] for h in result.items)
        semantic = semantic_evidence(factors["semantic"], closest - factors["semantic"], WEIGHTS)
        weight = WEIGHTS.lexical_weight
        blend = (1 - weight) * semantic + weight * factors["lexical"]
        lead = float(lead_floor(closest - factors["semantic"], WEIGHTS))
        # The first choice's floor holds only for an item sharing no word with the query.
        match = max(blend, lead) if factors["lexical"] <= 0 else blend
        assert factors["match"] == pytest.approx(match)  # no source given: no neighbours
        assert hit.score == pytest.approx(match * factors["recency"])


TOPICS = [
    f"the {part} {problem}"
    for part in ("database", "login page", "invoice PDF", "email queue", "mobile layout", "cache")
    for problem in (
        "fails on a missing column",
        "rejects valid input",
        "renders everything twice",
        "stalls when the server is slow",
        "truncates long names",
        "returns stale data after an update",
    )
]


QUESTION = "why did the wheel build time out on CI?"


async def test_the_counts_of_a_search_add_up_when_neighbours_join(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    # One long thread: the neighbours of the best full-text hits are fetched from beyond
    # the pool, and only the pool's gated-out members count as filtered.
    notes = [
        NewItem(
            "the wheel build timed out on the CI runner"
            if n % 12 == 5
            else f"release pipeline step {n}: {TOPICS[n % len(TOPICS)]}",
            "iteration",
            source="loop",
            iteration=1,
        )
        for n in range(144)
    ]
    # A gate low enough for MiniLM to let some of those unrelated neighbours in (cosine
    # 0.15-0.2 to the question), whatever the fitted default.
    settings = make_settings(retrieval={"min_similarity": 0.15})
    with anyio.fail_after(120):
        async with Engine(settings, model_loader=shared_model) as engine:
            await engine.store_many(notes)
            result = await engine.search(QUESTION)
            found = await engine.candidates(QUESTION, limit=40, text_limit=20)
    assert found.neighbours  # the case this test is about
    assert result.total_candidates == len(found.pool) + len(found.neighbours)
    gate = settings.retrieval.min_similarity
    gated = [c for c in found.pool if not passes_gate(c, gate)]
    assert len(gated) <= result.filtered_count <= result.total_candidates - len(result.items)
