"""What the console reads through the engine: pages of items (hot and archived), items
stored per iteration, and the observations kept since start (latencies, tiers, lifecycle
passes, feedback). Real model, real LanceDB on a temp dir."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

from ralph_context import ContextState, Engine, InvalidInput, NewItem
from ralph_context.models import Tier
from ralph_context.observed import LatencyHistogram, Observations
from tests.helpers import Loader, SettingsFactory, advance

AGES = {
    "aging_after_iterations": 1,
    "summarize_after_iterations": 3,
    "archive_after_iterations": 5,
    "prune_after_iterations": 50,
    "auto_run": False,
}


async def test_browse_pages_newest_first_with_the_total_and_filters(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            stored = []
            for n in range(7):
                kind = "error" if n % 2 else "skill"
                entry = NewItem(f"note number {n}", kind, tags=[f"t{n % 3}"], iteration=n)
                (item,) = await engine.store_many([entry])
                stored.append(item)
            first = await engine.browse(limit=3)
            second = await engine.browse(offset=3, limit=3)
            errors = await engine.browse(context_types=["error"], limit=50)
            tagged = await engine.browse(tags=["t0"], limit=50)
            window = await engine.browse(min_iteration=2, max_iteration=4, limit=50)
            counts = await engine.stored_per_iteration(0, 6)
            with pytest.raises(InvalidInput, match="state"):
                await engine.browse(state="forgotten")
            with pytest.raises(InvalidInput, match="limit"):
                await engine.browse(limit=501)
    newest_first = [item.id for item in reversed(stored)]
    assert [i.id for i in first.items] == newest_first[:3]
    assert [i.id for i in second.items] == newest_first[3:6]
    assert first.total == second.total == 7 and second.offset == 3
    assert {i.content for i in errors.items} == {"note number 1", "note number 3", "note number 5"}
    assert errors.total == 3
    assert {i.content for i in tagged.items} == {"note number 0", "note number 3", "note number 6"}
    assert sorted(i.created_iteration for i in window.items) == [2, 3, 4]
    assert counts == dict.fromkeys(range(7), 1)


async def test_browse_pages_the_archive_and_the_lifecycle_pass_is_observed(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        settings = make_settings(lifecycle=AGES)
        async with Engine(settings, model_loader=shared_model) as engine:
            old = await engine.store("the deploy needs FOO set", "error", iteration=0)
            await advance(engine, 10)
            fresh = await engine.store("the build is green again", "iteration", iteration=10)
            await engine.run_lifecycle()
            archived = await engine.browse(state=ContextState.ARCHIVED)
            hot = await engine.browse()
            passes = list(engine.observed.passes)
    assert [i.id for i in archived.items] == [old.id] and archived.total == 1
    assert [i.id for i in hot.items] == [fresh.id]
    assert len(passes) == 1
    assert passes[0].kind == "clock" and passes[0].archived == (old.id,)
    assert not passes[0].dry_run and passes[0].iteration == 10


async def test_searches_and_feedback_are_observed_since_start(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(90):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            item = await engine.store("restart the worker after a config change", "skill")
            for _ in range(5):
                await engine.search("how do I apply a config change")
            await engine.mark_useful(item.id, True, reason="it worked")
            await engine.mark_useful(item.id, False)
            observed = engine.observed
    latency = observed.latency.summary()
    assert latency.count == 5
    assert 0 < latency.p50 <= latency.p99 <= latency.max
    assert [change.tier for change in observed.tiers] == [Tier.SEMANTIC]
    history = observed.feedback_for(item.id)
    assert [(e.helpful, round(e.usefulness, 6), e.reason) for e in history] == [
        (True, 0.6, "it worked"),
        (False, 0.45, None),
    ]


def test_the_latency_histogram_reads_percentiles_within_two_percent() -> None:
    rng = np.random.default_rng(7)
    samples = rng.lognormal(mean=3.0, sigma=0.8, size=20_000)
    histogram = LatencyHistogram()
    for value in samples:
        histogram.add(float(value))
    for q in (50, 90, 99):
        exact = float(np.percentile(samples, q, method="inverted_cdf"))
        assert histogram.percentile(q) == pytest.approx(exact, rel=0.021)
    assert histogram.max == pytest.approx(float(samples.max()))
    assert LatencyHistogram().percentile(99) == 0.0


def test_a_tier_change_is_kept_once_per_change_and_history_is_bounded() -> None:
    observed = Observations(history=3)
    for tier in (Tier.SEMANTIC, Tier.SEMANTIC, Tier.TEXT, Tier.TEXT, Tier.SEMANTIC, Tier.NONE):
        observed.retrieval(5.0, tier, None if tier is Tier.SEMANTIC else "model down")
    assert [c.tier for c in observed.tiers] == [Tier.TEXT, Tier.SEMANTIC, Tier.NONE]
    assert observed.tiers[0].reason == "model down"
    assert observed.latency.count == 6
