"""Namespaces through the Python API: names checked, each namespace its own tables under one
store and one writer lock, nothing crossing between them, an existing store being the
``default`` namespace as it is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralph_context import Engine, namespaces
from ralph_context.errors import ConfigError, InvalidInput, StoreLocked
from ralph_context.models import ContextType, IterationResult
from ralph_context.storage import writer_lock
from ralph_context.storage.lance_store import LanceStore
from tests.helpers import Loader, SettingsFactory
from tests.storage.test_writer_lock import _hold


@pytest.mark.parametrize("name", ["default", "a", "team-a", "ci_42", "x" * 63])
def test_valid_names(name: str) -> None:
    assert namespaces.check_name(name) == name


@pytest.mark.parametrize("name", ["", "A", "team a", "../etc", "-lead", "x" * 64, "ns/b", "é"])
def test_invalid_names_are_refused_with_the_rule(name: str) -> None:
    with pytest.raises(InvalidInput, match="lowercase letters, digits"):
        namespaces.check_name(name)


def test_a_bad_namespace_setting_names_the_key(make_settings: SettingsFactory) -> None:
    with pytest.raises(ConfigError, match=r"storage\.namespace"):
        make_settings(storage={"namespace": "../other"})


def test_endpoints_per_namespace() -> None:
    base = "http://127.0.0.1:8765/mcp"
    assert namespaces.endpoint(base, "default") == base
    assert namespaces.endpoint(base, "ci") == "http://127.0.0.1:8765/ns/ci/mcp"


async def test_namespaces_share_nothing_but_the_store_folder(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    alpha = make_settings(storage={"namespace": "alpha"}, lifecycle={"auto_run": False})
    beta = make_settings(storage={"namespace": "beta"}, lifecycle={"auto_run": False})
    default = make_settings(lifecycle={"auto_run": False})
    root = default.store_root()
    assert alpha.store_path() == root / "namespaces" / "alpha"
    async with (
        Engine(alpha, model_loader=shared_model) as a,
        Engine(beta, model_loader=shared_model) as b,
        Engine(default, model_loader=shared_model) as d,
    ):
        await a.store("Deploy the billing service with blue-green switches", ContextType.SKILL)
        await a.record_iteration(
            IterationResult(
                iteration=3, success=False, summary="deploy", error="TimeoutError: billing"
            )
        )
        await b.store("Sourdough needs a long cold proof", ContextType.SKILL)
        found = await b.search("billing service deploy", min_score=0.0)
        assert all("billing" not in r.item.content for r in found.items)
        assert (await b.stats()).items == 1
        assert (await d.stats()).items == 0
        assert await b.recent_iterations(10) == []
        assert [r.iteration for r in await a.recent_iterations(10)] == [3]
        # One lock for the whole store, held by this process for all three.
        note = writer_lock.holder(root)
        assert note is not None and note.pid == os.getpid()
        # The default namespace's size (its size limit prunes against it) is its own.
        assert await d.size_bytes() < await a.size_bytes()
        assert await d.size_bytes() == namespaces.disk_bytes(root)
        # Forgetting every skill in alpha leaves beta's.
        await a.forget(context_types=[ContextType.SKILL])
        assert (await b.stats()).items == 1
    listed = {n.name for n in namespaces.listing(root)}
    assert listed == {"default", "alpha", "beta"}


def test_a_namespace_is_covered_by_the_store_folders_lock(tmp_path: Path) -> None:
    """Another process writing the store (any namespace) keeps this one out of every
    namespace of it."""
    holder = _hold(tmp_path)
    try:
        with pytest.raises(StoreLocked):
            LanceStore(
                namespaces.directory(tmp_path, "alpha"),
                model_id="m",
                dimension=4,
                lock_at=tmp_path,
            )
    finally:
        holder.kill()
        holder.communicate()


def test_an_http_entry_points_at_its_namespace() -> None:
    from ralph_context.integrations.mcp_json import server_entry

    entry = server_entry("http", config=None, host="127.0.0.1", port=8765, namespace="ci")
    assert (entry["type"], entry["url"]) == ("http", "http://127.0.0.1:8765/ns/ci/mcp")
    # Claude Code asks this command for the owner token's header (only the owner).
    assert str(entry.get("headersHelper", " token owner --header")).endswith(
        " token owner --header"
    )
    plain = server_entry("http", config=None, host="127.0.0.1", port=8765)
    assert plain["url"] == "http://127.0.0.1:8765/mcp"


def test_a_stores_size_leaves_out_the_namespaces_nested_in_it(tmp_path: Path) -> None:
    (tmp_path / "own.bin").write_bytes(b"x" * 100)
    nested = tmp_path / "namespaces" / "alpha"
    nested.mkdir(parents=True)
    (nested / "theirs.bin").write_bytes(b"y" * 5000)
    assert namespaces.disk_bytes(tmp_path) == 100
    assert namespaces.disk_bytes(nested) == 5000
