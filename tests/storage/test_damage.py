"""Damage detected and contained, on the real LanceDB store with the real model: a
truncated latest manifest (served read-only at the version before, ``repair`` gives back
all but the last write), a data file with random bytes written into it (``verify`` and
``health`` say which), a deleted data file (``export`` writes every other item)."""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from ralph_context import ContextItem, Engine, ItemNotFound, StoreDamaged
from ralph_context.config import Settings
from ralph_context.storage.integrity.checks import check_store, manifests
from ralph_context.storage.integrity.damage import repair
from ralph_context.storage.table.schema import ITEMS
from ralph_context.transfer.export_import import export_store
from tests.helpers import Loader, SettingsFactory
from tests.server_process import run_cli, store_config

NOTES = [
    "The release checklist asks for a signed tag before the changelog is published.",
    "Sourdough starter wants feeding twice a day while the kitchen stays warm.",
    "The cache key forgot the locale, so German users saw English prices.",
    "A heron waited at the pond's edge until the carp came up for bread.",
    "Pinning the protobuf version fixed the generated stubs failing to import.",
    "The quartet rehearsed the scherzo slowly, then at the marked tempo.",
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Written:
    """A store of :data:`NOTES`, each stored by a write of its own (a data file each),
    closed: its settings, the items and the hot table's folder."""

    settings: Settings
    items: list[ContextItem]
    table: Path


@pytest.fixture
async def written(make_settings: SettingsFactory, shared_model: Loader) -> Written:
    settings = make_settings()
    with anyio.fail_after(120):
        async with Engine(settings, model_loader=shared_model) as engine:
            items = [await engine.store(note, "output") for note in NOTES]
    store = settings.store_path()
    assert isinstance(store, Path)
    return Written(settings, items, store / f"{ITEMS}.lance")


async def _present(engine: Engine, items: list[ContextItem]) -> set[str]:
    """The ids of ``items`` the store has, with their text."""
    found = set()
    for item in items:
        try:
            if (await engine.get(item.id)).content == item.content:
                found.add(item.id)
        except ItemNotFound:
            pass
    return found


def _data_file_of(table: Path, content: str) -> Path:
    """The data file holding ``content`` (each note was written alone)."""
    for path in (table / "data").glob("*.lance"):
        if content.encode() in path.read_bytes():
            return path
    raise AssertionError(f"no data file holds {content!r}")


async def test_a_truncated_latest_manifest_serves_the_version_before_and_repair_restores_it(
    written: Written, shared_model: Loader
) -> None:
    settings, stored, table = written.settings, written.items, written.table
    with anyio.fail_after(180):
        latest = manifests(table)[max(manifests(table))]
        with latest.open("r+b") as manifest:
            manifest.truncate(latest.stat().st_size // 2)
        async with Engine(settings, model_loader=shared_model) as engine:
            health = engine.health()
            assert health.write_error is not None and latest.name in health.write_error
            assert "ralph-context repair" in health.write_error
            with pytest.raises(StoreDamaged, match=latest.name):
                await engine.store("A note for a damaged store.", "output")
            # Every write but the last one, whose version the truncated manifest was.
            assert await _present(engine, stored) >= {item.id for item in stored[:-1]}
        report = repair(table.parent)
        [lost] = report.tables
        assert lost.table == table.name and lost.lost_versions == [max(manifests(table)) + 1]
        assert (table.parent / lost.moved[0]).is_file()
        lost_ids = {i for held in lost.files for i in held.get("ids", [])}
        assert lost_ids <= {stored[-1].id}
        assert check_store(table.parent).ok
        async with Engine(settings, model_loader=shared_model) as engine:
            assert engine.health().write_error is None
            again = await engine.store("A note once the store was repaired.", "output")
            present = await _present(engine, [*stored, again])
        assert present >= {item.id for item in stored[:-1]} | {again.id}


async def test_random_bytes_in_a_data_file_are_reported_by_verify_and_health(
    written: Written, tmp_path: Path
) -> None:
    table = written.table
    with anyio.fail_after(300):
        damaged = _data_file_of(table, NOTES[2])
        size = damaged.stat().st_size
        with damaged.open("r+b") as data:  # 4 KiB of noise, the size kept
            data.seek(size // 4)
            data.write(os.urandom(min(4096, size // 2)))
        config = store_config(tmp_path / "ralph.yaml", table.parent)
        verify = await anyio.to_thread.run_sync(lambda: run_cli(config, "verify", "--json"))
        health = await anyio.to_thread.run_sync(lambda: run_cli(config, "health", "--json"))
    assert verify.returncode == 1, verify.stderr
    [report] = json.loads(verify.stdout)
    name = f"{table.name}/data/{damaged.name}"
    problems = [f["problem"] for f in report["findings"] if f["file"] == name]
    assert "its bytes differ from those committed" in problems  # (and its rows unreadable)
    assert {f["file"] for f in report["findings"]} == {name}
    assert health.returncode == 1, health.stderr
    files = json.loads(health.stdout)["files"]
    assert [f["file"] for f in files["findings"]] == [f"{table.name}/data/{damaged.name}"]


async def test_a_deleted_data_file_costs_export_only_its_own_items(
    written: Written, shared_model: Loader
) -> None:
    settings, stored = written.settings, written.items
    with anyio.fail_after(180):
        gone = _data_file_of(written.table, NOTES[3])
        gone.unlink()
        out = io.StringIO()
        async with Engine(settings, model_loader=shared_model, read_only=True) as engine:
            assert gone.name in (engine.health().write_error or "")
            report = await export_store(engine, out)
    exported = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    ids = {r["item"]["id"] for r in exported if r["kind"] == "item"}
    assert ids == {item.id for item in stored} - {stored[3].id}
    assert report.items == len(NOTES) - 1 and report.lost == 1
    assert len(report.unreadable) == 1 and gone.name in report.unreadable[0]


async def test_a_usage_file_gone_no_longer_takes_every_search_and_repair_gives_them_back(
    written: Written, shared_model: Loader
) -> None:
    """The usage counters are a side table: measured before, one of its data files deleted
    left the store down for every search (0 results) and ``repair`` said "nothing to
    repair". Now ``repair`` commits the table without that fragment (its counters lost,
    reported) and the items are all found again."""
    with anyio.fail_after(120):
        async with Engine(written.settings, model_loader=shared_model) as engine:
            await engine.mark_useful(written.items[2].id, True)
            await engine.mark_useful(written.items[4].id, False)
    store = written.settings.store_path()
    assert isinstance(store, Path)
    usage = store / "item_usage.lance"
    files = sorted((usage / "data").glob("*.lance"))
    assert files, "the feedback wrote the usage table"
    for path in files:
        path.unlink()
    with anyio.fail_after(120):
        async with Engine(written.settings, model_loader=shared_model) as engine:
            before = await engine.search("Why did German users see English prices?")
    assert before.items == ()  # the whole store was down for one side table's file

    report = repair(store)
    assert [gone.table for gone in report.dropped] == ["item_usage.lance"]
    assert report.dropped[0].rows >= 1
    assert check_store(store).findings == []
    with anyio.fail_after(120):
        async with Engine(written.settings, model_loader=shared_model) as engine:
            found = await engine.search("Why did German users see English prices?")
            assert await _present(engine, written.items) == {i.id for i in written.items}
    assert found.items and "locale" in found.items[0].item.content
