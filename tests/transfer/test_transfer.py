"""Export and import: a store survives the round trip as JSON lines (ids, counters,
archived items, iterations), a second import stores nothing twice, a file made without
vectors (or by another model) is embedded again, and a broken file is refused by line."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from ralph_context import Engine, InvalidInput
from ralph_context.models import IterationResult
from ralph_context.transfer.export_import import FORMAT, export_store, import_store
from tests.helpers import Loader, SettingsFactory
from tests.server_process import CLI, environment

NOTES = [
    ("the nightly export writes CSV with encoding ascii", "error", ["export"]),
    ("pin the wheel cache key to the lockfile hash", "skill", ["ci"]),
    ("customer names with accents broke the invoice job", "output", []),
]


async def _source(engine: Engine) -> tuple[list[str], str]:
    ids = [(await engine.store(text, kind, tags=tags)).id for text, kind, tags in NOTES]
    await engine.mark_useful(ids[1], helpful=True)
    await engine.record_iteration(IterationResult(iteration=1, summary="s1", success=True))
    await engine._require_storage().archive_items([ids[2]])
    out = io.StringIO()
    report = await export_store(engine, out)
    assert (report.items, report.archived, report.iterations) == (2, 1, 1)
    return ids, out.getvalue()


async def test_a_store_survives_export_and_import(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        ids, exported = await _source(engine)
    assert json.loads(exported.splitlines()[0])["format"] == FORMAT

    target = make_settings(storage={"path": str(tmp_path / "copy")}, lifecycle={"auto_run": False})
    async with Engine(target, model_loader=shared_model) as engine:
        report = await import_store(engine, io.StringIO(exported))
        assert (report.items, report.archived, report.iterations) == (2, 1, 1)
        assert report.embedded == 1  # archived items travel without their vector
        skill = await engine.get(ids[1])
        assert skill.content == NOTES[1][0] and skill.tags == ("ci",)
        assert skill.usefulness_score > 0.5
        assert (await engine.get(ids[2])).state.value == "archived"
        assert [r.summary for r in await engine.recent_iterations(5)] == ["s1"]
        found = await engine.search("wheel cache lockfile")
        assert found.items[0].item.id == ids[1]

        again = await import_store(engine, io.StringIO(exported))
        assert (again.items, again.archived, again.skipped) == (0, 0, 3)
        assert (await engine.stats()).items == 2


async def test_a_file_without_vectors_is_embedded_again(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    async with Engine(make_settings(), model_loader=shared_model) as engine:
        for text, kind, tags in NOTES:
            await engine.store(text, kind, tags=tags)
        out = io.StringIO()
        await export_store(engine, out, vectors=False)
    lines = out.getvalue().splitlines()
    assert all(json.loads(line).get("vector") is None for line in lines[1:])
    target = make_settings(storage={"path": str(tmp_path / "copy")})
    async with Engine(target, model_loader=shared_model) as engine:
        report = await import_store(engine, io.StringIO(out.getvalue()))
        assert report.embedded == 3
        assert (await engine.stats()).without_vector == 0


async def test_a_broken_file_is_refused_by_line(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    async with Engine(make_settings(), model_loader=shared_model) as engine:
        with pytest.raises(InvalidInput, match="not a ralph-context-export/1 file"):
            await import_store(engine, io.StringIO('{"kind": "item"}\n'))
        header = json.dumps({"format": FORMAT, "model_id": None, "dimension": None})
        with pytest.raises(InvalidInput, match="line 3"):
            await import_store(
                engine, io.StringIO(f'{header}\n\n{{"kind": "item", "item": {{}}}}\n')
            )
        assert (await engine.stats()).items == 0


def test_the_commands_move_a_store(tmp_path: Path) -> None:
    def config(name: str) -> Path:
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"learning:\n  mcp_context:\n    storage:\n      path: {name}\n")
        return path

    def cli(at: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*CLI, *arguments],
            env=environment(at),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        return done

    source, copy = config("source"), config("copy")
    cli(source, "store", NOTES[0][0], "--type", "error")
    dump = tmp_path / "dump.jsonl"
    assert "exported 1 items" in cli(source, "export", str(dump)).stderr
    assert "imported 1 items" in cli(copy, "import", str(dump)).stderr
    found = json.loads(cli(copy, "search", "CSV encoding", "--json").stdout)
    assert [hit["item"]["content"] for hit in found["items"]] == [NOTES[0][0]]
