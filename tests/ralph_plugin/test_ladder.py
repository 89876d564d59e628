"""The degradation ladder under fault injection, inside the real Ralph loop.

Every test breaks one part the way the failure table describes and checks two things: the
loop still runs all its iterations, and each iteration's tier says which rung served it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import anyio
from ralph_orchestrator.adapters.base import ToolResponse

from benchmarks.serving import free_port
from ralph_context import Engine, Settings
from ralph_context.engine import NewItem
from ralph_context.models import ContextType, Tier
from ralph_context.rendering import CONTEXT_HEADING
from ralph_context_ralph import Handle, ServerSource, attach
from tests.helpers import Loader, SettingsFactory
from tests.ralph_plugin.ralph_host import make_orchestrator, run_attached
from tests.ralph_plugin.test_hook import FACT, SCRIPT, TASK
from tests.server_process import owner_token, start_http_server, store_config


def then(action: Callable[[], object], output: str) -> Callable[[str], ToolResponse]:
    """A scripted step that breaks something while the agent is working."""

    def step(_prompt: str) -> ToolResponse:
        action()
        return ToolResponse(success=True, output=output)

    return step


def tiers(handle: Handle) -> list[Tier]:
    return [record.tier for record in handle.tiers]


def test_server_not_running_the_loop_continues_without_context(
    ralph_workdir: Path, make_settings: SettingsFactory
) -> None:
    source = ServerSource(f"http://127.0.0.1:{free_port()}/mcp")
    orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, SCRIPT, iterations=4)
    handle = run_attached(orchestrator, source, settings=make_settings())
    assert adapter.prompts == [TASK] * 4  # every iteration ran, prompts untouched
    assert tiers(handle) == [Tier.NONE] * 4
    assert all("server unavailable" in (r.reason or "") for r in handle.tiers)


def test_server_killed_mid_run_serves_the_tasks_cached_context(
    ralph_workdir: Path, make_settings: SettingsFactory
) -> None:
    config = store_config(ralph_workdir.parent / "server.yaml", ralph_workdir.parent / "store")
    server, url = start_http_server(config)
    try:
        script = [SCRIPT[0], then(server.kill, SCRIPT[1]), SCRIPT[2], SCRIPT[3]]
        orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, script, iterations=4)
        handle = run_attached(
            orchestrator,
            ServerSource(url, token=owner_token(config)),
            settings=make_settings(),
            timeout=5,
        )
    finally:
        server.stop(kill=True)
    assert len(adapter.prompts) == 4
    assert tiers(handle) == [Tier.SEMANTIC, Tier.SEMANTIC, Tier.CACHE, Tier.CACHE]
    assert FACT in adapter.prompts[1]  # served live, and cached for the task
    for prompt in adapter.prompts[2:]:
        assert re.search(
            rf"{CONTEXT_HEADING}\n\n### \[OUTPUT\] \([^)]+\)\n{re.escape(FACT)}", prompt
        )


def test_cache_survives_a_restart_of_the_loop(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings()
    orchestrator, _ = make_orchestrator(ralph_workdir, TASK, SCRIPT[:2], iterations=2)
    handle = run_attached(orchestrator, Engine(settings, model_loader=shared_model))
    # A new process, a dead server: the task still gets what it was last served.
    orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, SCRIPT[2:], iterations=2)
    dead = ServerSource(f"http://127.0.0.1:{free_port()}/mcp")
    handle = run_attached(orchestrator, dead, settings=settings)
    assert tiers(handle) == [Tier.CACHE, Tier.CACHE]
    assert all(FACT in prompt for prompt in adapter.prompts)


def test_storage_actor_killed_mid_run_serves_the_cached_context(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    engine = Engine(make_settings(), model_loader=shared_model)
    holder: list[Handle] = []

    def kill_storage() -> None:
        holder[0].bridge.portal.call(engine.supervisor.stop_actor, "storage")

    script = [SCRIPT[0], SCRIPT[1], then(kill_storage, SCRIPT[2]), SCRIPT[3]]
    orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, script, iterations=4)
    holder.append(attach(orchestrator, engine))
    handle = holder[0]
    try:
        orchestrator.run()
        health = engine.health()
    finally:
        handle.detach()
    assert len(adapter.prompts) == 4
    assert tiers(handle) == [Tier.SEMANTIC, Tier.SEMANTIC, Tier.SEMANTIC, Tier.CACHE]
    assert health.tier is Tier.NONE and health.actors["storage"].state.value == "stopped"
    assert FACT in adapter.prompts[3]


def test_model_directory_removed_serves_full_text_search_then_backfills(
    ralph_workdir: Path, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    installed = Settings.load(None).embeddings.resolved_model_path()
    model_dir = tmp_path / "model"
    shutil.copytree(installed, model_dir)
    settings = make_settings(embeddings={"model_path": str(model_dir)})
    shutil.rmtree(model_dir)
    orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, SCRIPT, iterations=4)
    engine = Engine(settings)
    handle = attach(orchestrator, engine)
    try:
        orchestrator.run()
        health = engine.health()
    finally:
        handle.detach()
    assert health.tier is Tier.TEXT
    assert len(adapter.prompts) == 4
    assert tiers(handle) == [Tier.TEXT] * 4
    assert "embedding model unavailable" in (handle.tiers[-1].reason or "")
    assert FACT in adapter.prompts[3]  # stored without a vector, found by its words

    # The model comes back: the next start embeds what was stored without it.
    shutil.copytree(installed, model_dir)

    async def recovered() -> None:
        async with Engine(settings) as engine:
            assert engine.health().tier is Tier.SEMANTIC
            assert (await engine.stats()).without_vector == 0
            found = await engine.search("why can't accented customer names be written?")
            assert found.tier is Tier.SEMANTIC and FACT in [h.item.content for h in found.items]

    anyio.run(recovered)


def test_damaged_vector_index_serves_text_then_is_rebuilt(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(storage={"vector_index_min_rows": 256})
    colours = ["red", "green", "amber", "violet", "grey", "white"]
    filler = [
        f"Note {n}: the {colours[n % 6]} dashboard widget {n * 7} shows {n % 13} charts"
        for n in range(299)
    ]

    async def previous_session() -> None:
        async with Engine(settings, model_loader=shared_model) as engine:
            await engine.store_many([NewItem(t, ContextType.OUTPUT) for t in [FACT, *filler]])
            await engine.maintain()
            assert (await engine.stats()).vector_index

    anyio.run(previous_session)
    folder = settings.store_path()
    assert isinstance(folder, Path)
    indexes = list((folder / "context_items.lance" / "_indices").glob("*/*.idx"))
    assert indexes  # the IVF index files
    for path in indexes:
        path.write_bytes(os.urandom(path.stat().st_size))

    orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, SCRIPT, iterations=3)
    handle = run_attached(orchestrator, Engine(settings, model_loader=shared_model))
    assert len(adapter.prompts) == 3
    first, *rest = handle.tiers
    assert first.tier is Tier.TEXT and "vector search failed" in (first.reason or "")
    assert [r.tier for r in rest] == [Tier.SEMANTIC, Tier.SEMANTIC]  # rebuilt meanwhile
    assert FACT in adapter.prompts[0]  # full-text search still found it


def test_size_cap_prunes_old_context_and_the_loop_keeps_storing(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    # A cap no store can meet: every pass prunes whatever is no longer active.
    settings = make_settings(
        storage={"max_size_mb": 0.01},
        lifecycle={
            "aging_after_iterations": 1,
            "summarize_after_iterations": 2,
            "archive_after_iterations": 3,
            "prune_after_iterations": 4,
            "auto_run": True,
        },
    )
    orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, SCRIPT, iterations=4)
    handle = run_attached(orchestrator, Engine(settings, model_loader=shared_model))
    assert len(adapter.prompts) == 4
    assert tiers(handle) == [Tier.SEMANTIC] * 4

    async def left() -> list[str]:
        async with Engine(settings.with_overrides(lifecycle={"auto_run": False})) as engine:
            history = await engine.recent_iterations(10)
            assert sorted(r.iteration for r in history) == [1, 2, 3, 4]  # every write landed
            # The pass that runs in the background after each iteration, run once more here:
            # the background ones race the loop's end (shutdown gives them 5 s).
            report = await engine.run_lifecycle()
            assert report.notes  # still over the cap: only recent items are left
            found = await engine.search(TASK, max_items=50, min_score=0.0)
            return [hit.item.content for hit in found.items]

    contents = anyio.run(left)
    assert SCRIPT[3] in contents  # the newest output is kept
    assert FACT not in contents  # the oldest was pruned for space
