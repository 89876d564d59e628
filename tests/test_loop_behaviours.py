"""What a loop needs from the served ranking, through Engine.search with the real model.

Recency, feedback and type order comparably relevant items; they never bury a strong match;
neighbours lift the answer stored next to a matching question; the lifecycle does not lose
what still matters. Default settings unless a test says otherwise (the lifecycle runs only
when a test asks, so the test controls the clock).
"""

from __future__ import annotations

import anyio

from ralph_context import ContextState, Engine, NewItem
from ralph_context.config import Settings
from tests.helpers import Loader, SettingsFactory, advance


def manual(make_settings: SettingsFactory) -> Settings:
    return make_settings(lifecycle={"auto_run": False})


def ids(result: object) -> list[str]:
    return [hit.item.id for hit in result.items]  # type: ignore[attr-defined]


async def test_a_newer_decision_outranks_the_one_it_replaced(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(60):
        async with Engine(manual(make_settings), model_loader=shared_model) as engine:
            old, new = [
                (await engine.store_many([NewItem(text, "iteration", source="loop", iteration=n)]))[
                    0
                ]
                for n, text in (
                    (5, "Decision: user sessions are stored in Redis, because it was deployed."),
                    (
                        40,
                        "Decision: user sessions moved from Redis to PostgreSQL; Redis lost "
                        "sessions on restart.",
                    ),
                )
            ]
            await advance(engine, 45)
            result = await engine.search("Which database keeps the user sessions?")
    # Comparably relevant (the old one is the closer paraphrase): the newer one leads.
    assert ids(result)[:2] == [new.id, old.id]
    first, second = result.items
    assert first.breakdown["match"] < second.breakdown["match"]
    assert first.breakdown["recency"] > second.breakdown["recency"]


async def test_an_item_marked_useful_rises_above_an_equally_similar_one(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    tips = (
        "Tip: to run the billing tests locally, set BILLING_TEST=1 before pytest.",
        "Tip: to run the billing tests locally, start the billing stub container first.",
    )
    query = "How do I run the billing tests locally?"
    with anyio.fail_after(60):
        async with Engine(manual(make_settings), model_loader=shared_model) as engine:
            stored = await engine.store_many([NewItem(t, "skill") for t in tips])
            before = ids(await engine.search(query))
            second = before[1]
            await engine.mark_useful(second, True)
            after = ids(await engine.search(query))
    assert set(before) == {item.id for item in stored}
    assert after[0] == second


async def test_the_last_iterations_error_surfaces_for_a_question_about_that_failure(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    failures = (
        (10, "KeyError in src/billing/handler.py: 'amount' missing from the payload."),
        (20, "TimeoutError in src/billing/handler.py: request to db.internal took 30 s."),
        (30, "AssertionError in src/billing/handler.py: expected status 200, got 500."),
    )
    with anyio.fail_after(60):
        async with Engine(manual(make_settings), model_loader=shared_model) as engine:
            stored = []
            for iteration, text in failures:
                stored += await engine.store_many(
                    [NewItem(text, "error", source="orchestrator", iteration=iteration)]
                )
            await advance(engine, 30)
            result = await engine.search("Why is src/billing/handler.py failing?")
    assert ids(result)[0] == stored[-1].id


async def test_a_skill_learned_early_is_still_first_after_many_fresh_loose_items(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(120):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            skill = await engine.store(
                "Skill: to regenerate the billing test fixtures, run `make fixtures` and "
                "commit tests/fixtures/billing.",
                "skill",
                iteration=1,
            )
            for iteration in range(2, 160, 4):
                await engine.store(
                    f"Iteration {iteration}: refactored the billing service and updated "
                    "src/billing/core.py.",
                    "iteration",
                    source="loop",
                    iteration=iteration,
                )
                await advance(engine, iteration)  # the lifecycle runs at its defaults
            await engine.run_lifecycle()
            result = await engine.search("How do I regenerate the billing test fixtures?")
            kept = await engine.get(skill.id)
            stats = await engine.stats()
    assert ids(result)[0] == skill.id
    assert kept.state is ContextState.ACTIVE  # skills do not age
    assert stats.archived > 0  # while the chatter around it did


async def test_an_archived_strong_match_is_still_found(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        async with Engine(manual(make_settings), model_loader=shared_model) as engine:
            old = await engine.store(
                "The nightly export failed because the SFTP host key changed; we pinned the "
                "new key in deploy/known_hosts.",
                "iteration",
                iteration=0,
            )
            await engine.store("Updated the README badges.", "iteration", iteration=70)
            await advance(engine, 70)
            report = await engine.run_lifecycle()
            result = await engine.search("Why did the nightly SFTP export fail?")
    assert report.archived == (old.id,)
    assert ids(result)[0] == old.id
    assert result.items[0].item.state is ContextState.ARCHIVED


async def test_near_duplicates_collapse_so_the_fix_is_not_crowded_out(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    failure = "TimeoutError in the billing nightly sync: request to db.internal took 30 s"
    with anyio.fail_after(60):
        async with Engine(manual(make_settings), model_loader=shared_model) as engine:
            copies = []
            for attempt in range(1, 6):
                copies += await engine.store_many(
                    [NewItem(f"{failure} (attempt {attempt}).", "error", iteration=attempt)]
                )
            fix = await engine.store(
                "Fixed the billing nightly sync timeout by raising the db.internal pool size.",
                "iteration",
                iteration=7,
            )
            await advance(engine, 8)
            result = await engine.search(
                "What do we know about the billing nightly sync timeout?", max_items=3
            )
    found = ids(result)
    assert fix.id in found
    assert len(found) == 2  # the fix and one copy of the failure: the rest collapsed
    assert len(set(found) & {c.id for c in copies}) == 1
    assert result.duplicate_count == 4


async def test_a_neighbour_lifts_the_answer_that_shares_no_word_with_the_question(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    turns = (
        "Caroline: What have you been researching lately?",
        "Melanie: Adoption agencies, mostly; we want to grow our family.",
        "Caroline: I went hiking in the mountains last weekend.",
    )
    query = "What has Caroline been researching?"
    scores = {}
    with anyio.fail_after(60):
        for source in ("conv-1", ""):  # a thread; then the same turns with no source
            settings = make_settings(
                lifecycle={"auto_run": False},
                storage={"path": str(make_settings().storage.path) + source},
            )
            async with Engine(settings, model_loader=shared_model) as engine:
                stored = await engine.store_many(
                    [NewItem(t, "iteration", source=source, iteration=1) for t in turns]
                )
                result = await engine.search(query, min_score=0.0)
            by_id = {hit.item.id: hit for hit in result.items}
            scores[source] = by_id[stored[1].id]
    threaded, alone = scores["conv-1"], scores[""]
    assert threaded.item.sequence == 1
    assert threaded.breakdown["neighbour"] > 0.4  # the question right before it
    assert alone.breakdown["neighbour"] == 0.0  # no source: no thread
    assert threaded.score > alone.score + 0.1
