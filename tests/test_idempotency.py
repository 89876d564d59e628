"""Retried writes: an idempotency key makes a repeated store or iteration record a no-op
that answers with the first call's result; recording an iteration again replaces it."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp
import pytest

from ralph_context import Engine, InvalidInput
from ralph_context.models import ContextItem, ContextType, IterationResult
from ralph_context.storage.filters import ItemFilter
from ralph_context.storage.lance_store import LanceStore
from tests.helpers import Loader, SettingsFactory, unit
from tests.server.mcp_scenario import call
from tests.server_process import stdio_server


async def test_a_repeated_key_returns_the_first_item_and_stores_nothing(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        first = await engine.store("pin the wheel cache key", "skill", idempotency_key="k-1")
        again = await engine.store("pin the wheel cache key", "skill", idempotency_key="k-1")
        other = await engine.store("pin the wheel cache key", "skill", idempotency_key="k-2")
        with pytest.raises(InvalidInput, match="idempotency_key"):
            await engine.store("x", "skill", idempotency_key="")
        stats = await engine.stats()
    assert again.id == first.id
    assert other.id != first.id
    assert stats.items == 2
    # The keys outlive the process.
    async with Engine(settings, model_loader=shared_model) as engine:
        later = await engine.store("pin the wheel cache key", "skill", idempotency_key="k-1")
        assert later.id == first.id
        assert (await engine.stats()).items == 2


def test_a_key_whose_item_was_never_written_finishes_the_first_call(tmp_path: Path) -> None:
    """The key is written before the item: a writer killed between the two leaves the key,
    and the retry stores the item under the id the key names."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    try:
        store.requests.put("k", "id-of-the-first-call")
        retried = ContextItem(content="the retried note", content_type=ContextType.OUTPUT)
        stored, written = store.add_keyed(retried, unit(1, 0, 0, 0), "k")
        assert (stored.id, written) == ("id-of-the-first-call", True)
        again, written = store.add_keyed(retried, unit(1, 0, 0, 0), "k")
        assert (again.id, written) == ("id-of-the-first-call", False)
        assert len(store.list_items(ItemFilter(), 10)) == 1
    finally:
        store.close()


async def test_an_iteration_recorded_twice_is_replaced_not_duplicated(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        failed = IterationResult(iteration=3, summary="tests fail", success=False, error="E1")
        first_error = await engine.record_iteration(failed)
        again_error = await engine.record_iteration(failed)
        fixed = IterationResult(iteration=3, summary="tests pass now", success=True)
        await engine.record_iteration(fixed)
        history = await engine.recent_iterations(10)
        errors = await engine.stats()
    assert first_error is not None and again_error is not None
    assert again_error.id == first_error.id  # the same error is not stored twice
    assert [(r.iteration, r.summary) for r in history] == [(3, "tests pass now")]
    assert errors.by_type.get(ContextType.ERROR.value) == 1


async def test_a_repeated_iteration_key_writes_nothing(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        first = await engine.record_iteration(
            IterationResult(iteration=1, summary="first", success=False, error="boom"),
            idempotency_key="run-7/iteration-1",
        )
        again = await engine.record_iteration(
            IterationResult(iteration=1, summary="a retry that differs", success=True),
            idempotency_key="run-7/iteration-1",
        )
        history = await engine.recent_iterations(10)
    assert first is not None and again is not None and again.id == first.id
    assert [r.summary for r in history] == ["first"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_tools_take_an_idempotency_key(tmp_path: Path) -> None:
    params = stdio_server(tmp_path)
    with anyio.fail_after(180):
        async with mcp.Client(params) as client:
            arguments = {"content": "a note", "context_type": "output", "idempotency_key": "a"}
            first = await call(client, "store_context", **arguments)
            again = await call(client, "store_context", **arguments)
            stats = await call(client, "get_context_stats")
            record = {"iteration": 1, "summary": "s", "success": True, "idempotency_key": "i"}
            await call(client, "store_iteration_result", **record)
            await call(client, "store_iteration_result", **{**record, "summary": "changed"})
            history = await call(client, "get_iteration_history")
    assert again["id"] == first["id"]
    assert stats["items"] == 1
    assert [r["summary"] for r in history["iterations"]] == ["s"]
