"""Retried writes: an idempotency key makes a repeated store or iteration record a no-op
that answers with the first call's result; the same key with other arguments is refused;
recording an iteration again replaces it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import lancedb
import mcp
import pyarrow as pa
import pytest

from ralph_context import Engine, IdempotencyConflict, InvalidInput
from ralph_context.models import ContextItem, ContextType, IterationResult
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.requests import REQUEST_KEYS, Claim, request_keys_schema
from tests.helpers import Loader, SettingsFactory, files_holding, unit
from tests.server.mcp_scenario import call, error_of
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


async def test_a_repeated_iteration_key_writes_nothing_and_refuses_another_result(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    failed = IterationResult(iteration=1, summary="first", success=False, error="boom")
    async with Engine(settings, model_loader=shared_model) as engine:
        first = await engine.record_iteration(failed, idempotency_key="run-7/iteration-1")
        # A retry is made later: only when it was made may differ.
        retried = failed.model_copy(update={"created_at": datetime.now(UTC)})
        again = await engine.record_iteration(retried, idempotency_key="run-7/iteration-1")
        with pytest.raises(IdempotencyConflict, match="'run-7/iteration-1' was used for a diff"):
            await engine.record_iteration(
                IterationResult(iteration=1, summary="a retry that differs", success=True),
                idempotency_key="run-7/iteration-1",
            )
        history = await engine.recent_iterations(10)
    assert first is not None and again is not None and again.id == first.id
    assert [r.summary for r in history] == ["first"]


async def test_a_key_used_again_with_other_arguments_is_refused_and_stores_nothing(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        first = await engine.store("the lockfile pins uv 0.5", "file", idempotency_key="k")
        for other in (
            {"content": "the lockfile pins uv 0.6"},
            {"tags": ["deps"]},
            {"metadata": {"n": 1}},
            {"iteration": 0},
        ):
            arguments: dict[str, Any] = {"content": "the lockfile pins uv 0.5", **other}
            with pytest.raises(
                IdempotencyConflict, match=r"^idempotency_key 'k' was used for a different request"
            ):
                await engine.store(content_type="file", idempotency_key="k", **arguments)
        again = await engine.store("the lockfile pins uv 0.5", "file", idempotency_key="k")
        stats = await engine.stats()
    assert again.id == first.id
    assert stats.items == 1
    # The fingerprint outlives the process with its key.
    async with Engine(settings, model_loader=shared_model) as engine:
        with pytest.raises(IdempotencyConflict):
            await engine.store("the lockfile pins uv 0.6", "file", idempotency_key="k")
        repeated = await engine.store("the lockfile pins uv 0.5", "file", idempotency_key="k")
        assert repeated.id == first.id


def test_in_a_group_commit_only_the_write_reusing_a_key_is_refused(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    try:
        kept, other, clash = (_item("kept"), _item("other"), _item("clash"))
        answers = store.add_keyed_many(
            [
                (kept, unit(1, 0, 0, 0), "k-1", "print-1"),
                (clash, unit(0, 1, 0, 0), "k-1", "print-2"),
                (other, unit(0, 0, 1, 0), "k-2", "print-3"),
            ]
        )
        written, refused, alone = answers
        assert not isinstance(written, Exception) and (written[0].id, written[1]) == (kept.id, True)
        assert isinstance(refused, IdempotencyConflict)
        assert not isinstance(alone, Exception) and (alone[0].id, alone[1]) == (other.id, True)
        assert sorted(i.content for i in store.get_items(store.all_ids())) == ["kept", "other"]
    finally:
        store.close()


def test_a_key_claimed_before_fingerprints_were_kept_answers_as_it_did(tmp_path: Path) -> None:
    """A keys table written by an earlier version has no fingerprint column: its keys
    answer any request with their item (as they always did), and the table gains the
    column on its first new key, whose fingerprint is then kept."""
    old = pa.schema([f for f in request_keys_schema() if f.name != "fingerprint"])
    row = {"key": "k-old", "target": "id-old", "created_at": datetime.now(UTC)}
    lancedb.connect(str(tmp_path)).create_table(
        REQUEST_KEYS, data=pa.Table.from_pylist([row], schema=old)
    )
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    try:
        assert store.requests.get("k-old") == Claim("id-old", None)
        stored, written = store.add_keyed(_item("the first call's"), unit(1, 0, 0, 0), "k-old", "p")
        assert (stored.id, written) == ("id-old", True)  # its item was missing: finished
        store.add_keyed(_item("new"), unit(0, 1, 0, 0), "k-new", "print-new")
    finally:
        store.close()
    reopened = LanceStore(tmp_path, model_id="m", dimension=4)
    try:
        assert reopened.requests.get("k-old") == Claim("id-old", None)
        assert reopened.add_keyed(_item("any"), None, "k-old", "q")[0].id == "id-old"
        with pytest.raises(IdempotencyConflict):
            reopened.add_keyed(_item("not new"), None, "k-new", "print-other")
    finally:
        reopened.close()


def _item(text: str) -> ContextItem:
    return ContextItem(content=text, content_type=ContextType.OUTPUT)


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
            await call(client, "store_iteration_result", **record)
            changed = {**record, "summary": "changed"}
            refused = await error_of(client, "store_iteration_result", **changed)
            history = await call(client, "get_iteration_history")
    assert again["id"] == first["id"]
    assert stats["items"] == 1
    assert "idempotency_key 'i' was used for a different request" in refused
    assert [r["summary"] for r in history["iterations"]] == ["s"]


def test_raw_keys_of_an_earlier_version_leave_the_disk_at_the_first_open(tmp_path: Path) -> None:
    """A keys table written before keys were digests holds them as the clients sent them
    (a token used as a key among them): the first writer's open rewrites them as HMACs and
    drops the table's old versions, and every key still answers as before."""
    raw = "ghp_" + "Rk8sLw2QpZx9YtN4vB7mJ3cDq8Lw2Rk9Zt4V"
    row = {"key": raw, "target": "id-old", "created_at": datetime.now(UTC), "fingerprint": "p"}
    lancedb.connect(str(tmp_path)).create_table(
        REQUEST_KEYS, data=pa.Table.from_pylist([row], schema=request_keys_schema())
    )
    assert files_holding(tmp_path, raw)

    store = LanceStore(tmp_path, model_id="m", dimension=4)
    try:
        assert files_holding(tmp_path, raw) == []
        claim = store.requests.get(raw)
        assert claim is not None and claim.target_for(raw, "p") == "id-old"
        with pytest.raises(IdempotencyConflict):
            claim.target_for(raw, "another request")
    finally:
        store.close()
