"""The context lifecycle through the engine: real model, real LanceDB on a temp dir."""

from __future__ import annotations

import anyio
import pytest

from ralph_context import ContextState, Engine, ItemNotFound, NewItem
from ralph_context.config import Settings
from tests.helpers import Loader, SettingsFactory, advance

# Small ages so a test walks the whole life in a few iterations.
AGES = {
    "aging_after_iterations": 1,
    "summarize_after_iterations": 3,
    "archive_after_iterations": 5,
    "prune_after_iterations": 8,
    "prune_min_usefulness": 0.3,
}

REPORT = (
    "The nightly build failed in the integration stage. "
    "The payments service could not reach its database because the connection pool was "
    "exhausted. Raising the pool size from 10 to 40 made the integration tests pass. "
    "The dashboard colours were also tweaked, unrelated to the failure. "
    "We added an alert on pool saturation so the next exhaustion pages someone. "
    "Lunch was pizza. "
    "The root cause was a leaked connection in the refund handler, fixed in the same change."
)


def settings(make_settings: SettingsFactory, auto: bool = False, **storage: object) -> Settings:
    """Deterministic by default: passes run only when a test asks."""
    lifecycle = {**AGES, "auto_run": auto}
    if storage:
        return make_settings(lifecycle=lifecycle, storage=storage)
    return make_settings(lifecycle=lifecycle)


async def test_an_item_walks_active_aging_summarized_archived(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        async with Engine(settings(make_settings), model_loader=shared_model) as engine:
            item = await engine.store(REPORT, "iteration", iteration=0)
            states = [(await engine.get(item.id)).state]
            for now in (2, 4, 6):
                await advance(engine, now)
                await engine.run_lifecycle()
                states.append((await engine.get(item.id)).state)
                if now == 4:
                    summarized = await engine.get(item.id)
                    original = await engine.original(item.id)
                    found = await engine.search("database connection pool exhausted")
            stats = await engine.stats()
            after_archive = await engine.search("database connection pool exhausted")
    assert states == [
        ContextState.ACTIVE,
        ContextState.AGING,
        ContextState.SUMMARIZED,
        ContextState.ARCHIVED,
    ]
    assert len(summarized.content) < len(REPORT) / 2
    assert summarized.summary == summarized.content
    assert summarized.original_length == len(REPORT)
    assert "pool" in summarized.content
    assert "pizza" not in summarized.content  # the least central sentence is dropped
    assert original == REPORT
    assert [hit.item.id for hit in found.items] == [item.id]
    # Archived: out of the hot table, still readable by id, and still found by a query it
    # answers: no live item matches, so the archive is searched.
    assert [hit.item.id for hit in after_archive.items] == [item.id]
    assert after_archive.items[0].item.state is ContextState.ARCHIVED
    assert stats.items == 0
    assert stats.archived == 1


async def test_skills_and_the_task_do_not_age_but_other_types_do(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        async with Engine(settings(make_settings), model_loader=shared_model) as engine:
            skill, task, output = await engine.store_many(
                [
                    NewItem("Run alembic upgrade head before the API starts.", "skill"),
                    NewItem("Build the invoice export for the billing team.", "task"),
                    NewItem("Exported 12 invoices to CSV.", "output"),
                ]
            )
            await advance(engine, 7)
            report = await engine.run_lifecycle()
            states = {i: (await engine.get(i)).state for i in (skill.id, task.id, output.id)}
    assert report.archived == (output.id,)
    assert states[skill.id] is ContextState.ACTIVE
    assert states[task.id] is ContextState.ACTIVE
    assert states[output.id] is ContextState.ARCHIVED


async def test_pruning_removes_only_old_useless_items_and_loses_nothing_else(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        async with Engine(settings(make_settings), model_loader=shared_model) as engine:
            old_bad, old_good, new_bad = await engine.store_many(
                [
                    NewItem("Retry the upload with exponential backoff.", "output", iteration=0),
                    NewItem("Pin numpy below 2 for the legacy wheels.", "output", iteration=0),
                    NewItem("Use the staging bucket for uploads.", "output", iteration=9),
                ]
            )
            for target in (old_bad.id, new_bad.id):
                await engine.mark_useful(target, False)
                await engine.mark_useful(target, False)  # 0.5 -> 0.35 -> 0.2
            await advance(engine, 10)
            report = await engine.run_lifecycle()
            kept_old = await engine.get(old_good.id)
            kept_new = await engine.get(new_bad.id)
            with pytest.raises(ItemNotFound):
                await engine.get(old_bad.id)
    assert report.pruned == (old_bad.id,)
    assert report.archived == (old_good.id,)
    assert kept_old.state is ContextState.ARCHIVED
    assert kept_new.state is ContextState.ACTIVE  # useless but fresh: not pruned by age


async def test_prune_tool_removes_low_usefulness_at_any_age_and_dry_run_changes_nothing(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        async with Engine(settings(make_settings), model_loader=shared_model) as engine:
            bad, good = await engine.store_many(
                [NewItem("flaky advice", "skill"), NewItem("solid advice", "skill")]
            )
            await engine.mark_useful(bad.id, False)
            await engine.mark_useful(bad.id, False)
            before = await engine.stats()
            preview = await engine.prune_low_value(0.3, dry_run=True)
            unchanged = await engine.stats()
            still_there = await engine.get(bad.id)
            done = await engine.prune_low_value(0.3)
            after = await engine.stats()
            survivor = await engine.get(good.id)
    assert preview.dry_run and preview.pruned == (bad.id,)
    assert (unchanged.items, unchanged.by_state) == (before.items, before.by_state)
    assert still_there.id == bad.id
    assert done.pruned == (bad.id,)
    assert after.items == 1
    assert survivor.content == "solid advice"


async def test_lifecycle_dry_run_reports_the_plan_and_changes_nothing(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        async with Engine(settings(make_settings), model_loader=shared_model) as engine:
            long, short = await engine.store_many(
                [
                    NewItem(REPORT, "iteration", iteration=0),
                    NewItem("short note", "output", iteration=0),
                ]
            )
            await advance(engine, 4)
            summary_preview = await engine.summarize_old(2, dry_run=True)
            plan = await engine.run_lifecycle(dry_run=True)
            states = {i: (await engine.get(i)).state for i in (long.id, short.id)}
            text = (await engine.get(long.id)).content
            summarized = await engine.summarize_old(2)
            rewritten = await engine.get(long.id)
            untouched = await engine.get(short.id)
    assert set(summary_preview.summarized) == {long.id, short.id}
    assert set(plan.summarized) == {long.id, short.id}
    assert states == {long.id: ContextState.ACTIVE, short.id: ContextState.ACTIVE}
    assert text == REPORT
    assert summarized.chars_saved > 0
    assert rewritten.state is ContextState.SUMMARIZED
    assert untouched.content == "short note"  # already short: state changes, text does not
    assert untouched.state is ContextState.SUMMARIZED


async def test_a_pass_runs_by_itself_after_each_stored_iteration(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        async with Engine(settings(make_settings, auto=True), model_loader=shared_model) as engine:
            item = await engine.store("pool exhausted in payments", "error", iteration=0)
            await advance(engine, 3)
            for _ in range(1000):  # the pass runs in the background: poll for its effect
                state = (await engine.get(item.id)).state
                if state is not ContextState.ACTIVE:
                    break
                await anyio.sleep(0.05)
    assert state is ContextState.AGING


async def test_over_the_size_limit_old_items_go_first_and_recent_ones_stay(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    tiny = settings(make_settings, max_size_mb=0.05)
    with anyio.fail_after(120):
        async with Engine(tiny, model_loader=shared_model) as engine:
            old = await engine.store_many(
                [NewItem(f"{REPORT} (copy {n})", "output", iteration=2) for n in range(40)]
            )
            recent = await engine.store("the newest lesson", "skill", iteration=10)
            await advance(engine, 10)
            report = await engine.run_lifecycle()
            survivor = await engine.get(recent.id)
    assert report.pruned_for_space
    assert set(report.pruned_for_space) <= {item.id for item in old}
    assert survivor.content == "the newest lesson"
    assert report.size_bytes is not None
