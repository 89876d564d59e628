"""The engine facade with the real model and real LanceDB on tmp dirs."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ralph_context import (
    ActorUnavailable,
    ContextType,
    Engine,
    ItemNotFound,
    NewItem,
    Tier,
)
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context.errors import ModelError
from ralph_context.runtime import ActorState
from tests.helpers import Loader, SettingsFactory


def no_model(_settings: EmbeddingsSettings) -> LocalEmbedder:
    raise ModelError("no embedding model at /nowhere; run `ralph-context model install`")


async def test_items_survive_an_engine_restart(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings()
    with anyio.fail_after(30):
        async with Engine(settings, model_loader=shared_model) as engine:
            item = await engine.store(
                "Added requests to requirements.txt", ContextType.ERROR, tags=["deps"]
            )
        async with Engine(settings, model_loader=shared_model) as engine:
            again = await engine.get(item.id)
            result = await engine.search("missing module requests", max_items=5)
    assert again == item
    assert result.tier is Tier.SEMANTIC
    assert [hit.item.id for hit in result.items] == [item.id]


async def test_two_hundred_concurrent_stores_all_land(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    ids: list[str] = []
    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            before = (await engine.stats()).table_version

            async def store(n: int) -> None:
                item = await engine.store(f"note {n}: worker {n % 7} finished job {n}", "output")
                ids.append(item.id)

            async with anyio.create_task_group() as tg:
                for n in range(200):
                    tg.start_soon(store, n)
            stats = await engine.stats()
            found = [await engine.get(item_id) for item_id in ids]
    assert len(set(ids)) == 200
    assert stats.items == 200
    assert stats.without_vector == 0
    assert {item.id for item in found} == set(ids)
    # Concurrent stores are coalesced: far fewer table versions than calls.
    assert stats.table_version - before < 50


async def test_semantic_search_ranks_a_paraphrase_above_unrelated_text(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            target = await engine.store(
                "The deploy failed because the database password expired.", "error"
            )
            await engine.store("Grandma's apple pie needs two cups of sugar.", "output")
            await engine.store("The football match ended in a draw.", "output")
            await engine.store("Rendered the landing page with a dark theme.", "iteration")
            result = await engine.search(
                "release broke since DB credentials were out of date", min_score=0.0
            )
    assert result.tier is Tier.SEMANTIC
    # The three unrelated items are under the similarity gate: fresh and unrated, they would
    # otherwise score 0.5 on recency, usefulness and type alone.
    assert [hit.item.id for hit in result.items] == [target.id]
    assert result.total_candidates == 4
    assert result.filtered_count == 3
    assert result.items[0].breakdown["semantic"] > 0.4


async def test_min_score_and_type_filter_narrow_the_results(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            error = await engine.store("pip install failed: no matching distribution", "error")
            skill = await engine.store("Pin package versions before pip install", "skill")
            await engine.store("The sunset over the harbour was orange.", "output")
            only_skills = await engine.search("pip install problems", context_types=["skill"])
            strict = await engine.search("pip install problems", min_score=0.99)
            loose = await engine.search("pip install problems", min_score=0.0)
    assert [h.item.id for h in only_skills.items] == [skill.id]
    assert strict.items == ()
    assert strict.filtered_count == strict.total_candidates == 3
    assert {h.item.id for h in loose.items} >= {error.id, skill.id}


async def test_literal_sql_in_a_tag_is_stored_and_filtered_literally(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    nasty = "x' OR 1=1 --"
    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            tagged = await engine.store("deploy notes with a strange tag", "output", tags=[nasty])
            await engine.store("deploy notes without it", "output", tags=["x"])
            await engine.store("deploy notes, untagged", "output")
            result = await engine.search("deploy notes", tags=[nasty], min_score=0.0)
            stats = await engine.stats()
    assert [h.item.id for h in result.items] == [tagged.id]
    assert result.items[0].item.tags == (nasty,)
    assert stats.items == 3


async def test_text_tier_answers_when_the_embedding_actor_is_stopped(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            target = await engine.store("ImportError: cannot import name 'soup' from bs4", "error")
            await engine.store("Wrote the README introduction", "iteration")
            snapshot = await engine.supervisor.stop_actor("embedding")
            assert snapshot.state is ActorState.STOPPED
            result = await engine.search("ImportError bs4")
            later = await engine.store("stored while the model is gone: bs4 pinned", "error")
            again = await engine.search("bs4 pinned")
            health = engine.health()
    assert result.tier is Tier.TEXT
    assert result.degraded_reason and "embedding" in result.degraded_reason
    assert result.items[0].item.id == target.id
    assert again.tier is Tier.TEXT
    assert again.items[0].item.id == later.id
    assert health.tier is Tier.TEXT
    assert health.actors["storage"].serving


class CrashingModel(LocalEmbedder):
    """The real model, until `broken` is set: then inference raises like a dead ONNX session."""

    def __init__(self, real: LocalEmbedder) -> None:
        super().__init__(real._model, real.model_id, real.dimension)
        self.broken = False

    def embed(  # type: ignore[override]
        self,
        texts: list[str],
        batch_size: int,
        *,
        query: bool = False,
        request_size: int | None = None,
    ) -> object:
        if self.broken:
            raise RuntimeError("onnxruntime session lost")
        return super().embed(texts, batch_size, query=query, request_size=request_size)


async def test_a_crashing_model_degrades_search_to_text_without_raising(
    make_settings: SettingsFactory, embedder: LocalEmbedder
) -> None:
    model = CrashingModel(embedder)
    settings = make_settings()
    with anyio.fail_after(30):
        async with Engine(settings, model_loader=lambda _s: model) as engine:
            target = await engine.store("Segfault in the image resizer on PNG input", "error")
            model.broken = True
            result = await engine.search("resizer crashes on png files")
            stored = await engine.store("raw note kept while inference is broken", "output")
            stats = await engine.stats()
            health = engine.health()
    assert result.tier is Tier.TEXT
    assert [h.item.id for h in result.items] == [target.id]
    assert stored.content.startswith("raw note")
    # Counted in stats and health (from running counts).
    assert stats.without_vector == 1 and health.without_vector == 1


async def test_items_stored_without_a_vector_get_one_once_the_model_answers_again(
    make_settings: SettingsFactory, embedder: LocalEmbedder
) -> None:
    model = CrashingModel(embedder)
    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=lambda _s: model) as engine:
            model.broken = True
            raw = await engine.store("raw note kept while inference is broken", "output")
            assert engine.health().without_vector == 1
            model.broken = False
            while engine.semantic_unavailable is not None:  # noqa: ASYNC110 - the restart
                await anyio.sleep(0.05)
            # The next write the model embeds starts a backfill in the background.
            await engine.store("the model is back", "output")
            while engine.health().without_vector:  # noqa: ASYNC110 - polling a count
                await anyio.sleep(0.05)
            assert (await engine.stats()).without_vector == 0
            found = await engine.search("note kept while inference was broken")
            assert found.tier is Tier.SEMANTIC
            assert raw.id in [hit.item.id for hit in found.items]


async def test_engine_without_a_model_starts_and_serves_the_text_tier(
    make_settings: SettingsFactory,
) -> None:
    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=no_model) as engine:
            health = engine.health()
            item = await engine.store("Rust toolchain 1.70 is too old for this crate", "error")
            result = await engine.search("toolchain too old")
    assert health.tier is Tier.TEXT
    assert health.actors["embedding"].state is ActorState.DOWN
    assert "model install" in (health.actors["embedding"].last_error or "")
    assert result.tier is Tier.TEXT
    assert [h.item.id for h in result.items] == [item.id]


async def test_store_many_is_all_or_nothing(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    from ralph_context import EmptyContent

    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            with pytest.raises(EmptyContent):
                await engine.store_many([NewItem("fine", "output"), NewItem("   ", "output")])
            stored = await engine.store_many([NewItem("a", "output"), NewItem("b", "task")])
            stats = await engine.stats()
    assert stats.items == 2
    assert [i.content for i in stored] == ["a", "b"]


async def test_get_unknown_id_is_a_clear_not_found(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            with pytest.raises(ItemNotFound, match="no context item with id 'nope'"):
                await engine.get("nope")


async def test_retrieval_counts_accesses(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings()
    with anyio.fail_after(30):
        async with Engine(settings, model_loader=shared_model) as engine:
            item = await engine.store("cache invalidation bug in the session store", "error")
            await engine.search("session cache bug")
            await engine.search("session cache invalidation")
            seen = await engine.get(item.id)
        async with Engine(settings, model_loader=shared_model) as engine:
            persisted = await engine.get(item.id)
    assert seen.access_count == 2
    assert seen.last_accessed is not None
    assert persisted.access_count == 2


async def test_memory_backend_keeps_nothing_on_disk(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: object
) -> None:
    settings = make_settings(storage={"backend": "memory"})
    with anyio.fail_after(30):
        async with Engine(settings, model_loader=shared_model) as engine:
            await engine.store("ephemeral note", "output")
            assert (await engine.stats()).items == 1
            assert engine.health().store == "memory"
        async with Engine(settings, model_loader=shared_model) as engine:
            assert (await engine.stats()).items == 0
    folder = settings.store_path()
    assert isinstance(folder, Path)
    assert not folder.exists()


async def test_engine_with_an_unopenable_store_answers_with_tier_none(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the store should be")
    settings = make_settings(storage={"path": str(blocker / "store")})
    with anyio.fail_after(30):
        async with Engine(settings, model_loader=shared_model) as engine:
            health = engine.health()
            result = await engine.search("anything at all")
            with pytest.raises(ActorUnavailable, match="storage"):
                await engine.store("cannot land", "output")
    assert health.tier is Tier.NONE
    assert health.actors["storage"].state is ActorState.DOWN
    assert health.actors["embedding"].serving
    assert result.tier is Tier.NONE
    assert result.items == ()
    assert result.degraded_reason and "storage" in result.degraded_reason


async def test_malformed_ids_and_fields_are_refused_and_the_store_keeps_serving(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    from ralph_context import InvalidEncoding, InvalidInput, IterationResult

    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            kept = await engine.store("the migration needs a maintenance window", "task")
            with pytest.raises(InvalidInput, match="item_id must be text"):
                await engine.get(123)  # type: ignore[arg-type]
            with pytest.raises(InvalidInput, match="item_id is empty"):
                await engine.get("  ")
            with pytest.raises(InvalidEncoding, match="source"):
                await engine.store("fine text", "output", source="bad \ud800")
            with pytest.raises(InvalidEncoding, match="summary"):
                await engine.record_iteration(
                    IterationResult(iteration=1, success=True, summary="x \udfff")
                )
            health = engine.health()
            assert await engine.get(kept.id) == kept
    assert health.actors["storage"].restarts == 0
    assert health.tier is Tier.SEMANTIC


async def test_data_the_store_rejects_is_refused_without_crashing_or_failing_neighbours(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """Bypassing the engine's checks, a row pyarrow cannot encode reaches the storage actor:
    only that caller is refused; concurrent writers in the same batch still land."""
    from ralph_context import ContextItem, StoreError

    outcomes: dict[str, str] = {}
    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            storage = engine._require_storage()

            async def add(name: str, source: str) -> None:
                item = ContextItem(content=name, content_type=ContextType.OUTPUT, source=source)
                try:
                    await storage.add_items([(item, None)])
                    outcomes[name] = "stored"
                except StoreError as error:
                    outcomes[name] = f"refused: {error}"

            async with anyio.create_task_group() as tg:
                for n in range(5):
                    tg.start_soon(add, f"good {n}", "test")
                tg.start_soon(add, "bad", "\ud800")
            stats = await engine.stats()
            health = engine.health()
    assert outcomes.pop("bad").startswith("refused: the store rejected the request")
    assert set(outcomes.values()) == {"stored"}
    assert stats.items == 5
    assert health.actors["storage"].restarts == 0


async def test_a_large_store_many_is_embedded_in_chunks_not_stored_raw(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    texts = [f"log {n}: service {n % 13} restarted" for n in range(300)]
    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            stored = await engine.store_many([NewItem(t, "output") for t in texts])
            stats = await engine.stats()
    assert len(stored) == 300
    assert stats.without_vector == 0


async def test_the_vector_index_is_built_without_an_explicit_maintenance_call(
    make_settings: SettingsFactory, shared_model: Loader, embedder: LocalEmbedder
) -> None:
    import numpy as np

    from ralph_context import ContextItem

    rng = np.random.default_rng(3)
    seeds = embedder.embed(["disk full on the build agent", "flaky network in CI"], 2)
    noisy = seeds[rng.integers(0, 2, 300)] + 0.2 * rng.normal(size=(300, 384))
    vectors = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)
    settings = make_settings(storage={"vector_index_min_rows": 256})
    with anyio.fail_after(60):
        async with Engine(settings, model_loader=shared_model) as engine:
            items = [
                ContextItem(content=f"row {n}", content_type=ContextType.OUTPUT) for n in range(300)
            ]
            await engine.store_embedded(list(zip(items, vectors, strict=True)))
            await engine.store("one more write lets maintenance run", "output")
            # The write does not wait for the maintenance it started (appends are served
            # beside it): the index is there once that maintenance ends.
            stats = await engine.stats()
            while not stats.vector_index:
                await anyio.sleep(0.2)
                stats = await engine.stats()
            result = await engine.search("the build agent ran out of disk", min_score=0.0)
    assert stats.vector_index
    assert result.tier is Tier.SEMANTIC
    assert len(result.items) == 10


async def test_bulk_path_refuses_bad_vectors_and_bad_content(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    import numpy as np

    from ralph_context import ContextItem, EmptyContent, StoreError

    good = np.zeros(384, dtype=np.float32)
    good[0] = 1.0
    with anyio.fail_after(30):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            item = ContextItem(content="ok", content_type=ContextType.OUTPUT)
            with pytest.raises(StoreError, match="finite"):
                await engine.store_embedded([(item, np.full(384, np.nan, dtype=np.float32))])
            with pytest.raises(StoreError, match="unit length"):
                await engine.store_embedded([(item, good * 2)])
            with pytest.raises(EmptyContent):
                await engine.store_embedded(
                    [(ContextItem(content="  ", content_type=ContextType.OUTPUT), good)]
                )
            assert (await engine.stats()).items == 0


async def test_mark_useful_moves_usefulness_clamps_and_persists(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    from ralph_context import InvalidInput

    settings = make_settings()
    with anyio.fail_after(30):
        async with Engine(settings, model_loader=shared_model) as engine:
            item = await engine.store("retry the flaky upload with backoff", "skill")
            up = await engine.mark_useful(item.id, True, reason="fixed the upload")
            down = await engine.mark_useful(item.id, False)
            for _ in range(10):
                floor = await engine.mark_useful(item.id, False)
            with pytest.raises(ItemNotFound, match="no context item with id 'missing'"):
                await engine.mark_useful("missing", True)
            with pytest.raises(InvalidInput, match="helpful must be true or false"):
                await engine.mark_useful(item.id, "yes")  # type: ignore[arg-type]
            for _ in range(20):
                ceiling = await engine.mark_useful(item.id, True)
            seen = await engine.get(item.id)
        async with Engine(settings, model_loader=shared_model) as engine:
            persisted = await engine.get(item.id)
            await engine.mark_useful(item.id, False)
            hit = (await engine.search("upload keeps failing", min_score=0.0)).items[0]
    assert up == pytest.approx(0.6)
    assert down == pytest.approx(0.45)
    assert floor == 0.0
    assert ceiling == 1.0
    assert seen.usefulness_score == persisted.usefulness_score == 1.0
    assert hit.item.id == item.id
    assert hit.item.usefulness_score == pytest.approx(0.85)


async def test_the_iteration_clock_survives_a_restart(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    from ralph_context import IterationResult

    settings = make_settings()
    with anyio.fail_after(30):
        async with Engine(settings, model_loader=shared_model) as engine:
            await engine.record_iteration(IterationResult(iteration=7, success=True, summary="s"))
        async with Engine(settings, model_loader=shared_model) as engine:
            clock = engine.current_iteration
            item = await engine.store("stored after the restart", "output")
    assert clock == 7
    assert item.created_iteration == 8  # the iteration in progress, after the restart too
