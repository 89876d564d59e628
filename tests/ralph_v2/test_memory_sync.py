"""The hook in process on a real engine: the sync of the agent's own memories (duplicate
ids, which Ralph does not keep unique, are two memories; an edited one replaces its old
text; a memories.md that is not there forgets nothing), and what an iteration's record
says about its tasks."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from ralph_context.engine import Engine
from ralph_context.integrations.ralph_v2.client import _Engine
from ralph_context.integrations.ralph_v2.hook import MEMORY_TAG, STATE_FILE, Report, handle
from ralph_context.integrations.ralph_v2.payload import read_payload
from tests.helpers import Loader, SettingsFactory
from tests.ralph_v2.test_hook_loop import payload


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _memory(mem_id: str, text: str) -> str:
    return f"### {mem_id}\n> {text}\n<!-- tags: db | created: 2025-01-20 -->\n\n"


def _write(workspace: Path, *memories: str) -> None:
    body = "".join(memories)
    (workspace / ".ralph" / "agent" / "memories.md").write_text(
        f"# Memories\n\n## Patterns\n\n## Decisions\n\n## Fixes\n\n{body}## Context\n",
        encoding="utf-8",
    )


def _start(workspace: Path, current: int) -> str:
    return payload(workspace, "post.iteration.start", current)


def _caller(workspace: Path, memory: _Engine) -> Callable[[int], Awaitable[Report]]:
    """The hook's post.iteration.start for iteration N, on ``memory``."""

    async def call(current: int) -> Report:
        with anyio.fail_after(60):
            return await handle(read_payload(_start(workspace, current)), memory, max_items=5)

    return call


async def _synced(engine: Engine) -> list[str]:
    """The texts of every item the sync keeps (a dry run of forget lists them all)."""
    listed = await engine.forget(tags=[MEMORY_TAG], dry_run=True)
    return sorted([(await engine.get(item_id)).content for item_id in listed.item_ids])


async def test_duplicate_ids_edits_and_a_missing_file(
    tmp_path: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".ralph" / "agent").mkdir(parents=True)
    twice = "mem-1737372000-a1b2"
    _write(workspace, _memory(twice, "Postgres runs on port 5433"), _memory(twice, "DB is x"))
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        call = _caller(workspace, _Engine(engine, writable=True))

        first = await call(1)
        assert first.synced == 2 and first.forgotten == 0
        assert await _synced(engine) == ["DB is x", "Postgres runs on port 5433"]
        again = await call(2)  # nothing changed: nothing churns
        assert (again.synced, again.forgotten) == (0, 0)
        assert await _synced(engine) == ["DB is x", "Postgres runs on port 5433"]

        _write(workspace, _memory(twice, "Postgres runs on port 5434"), _memory(twice, "DB is x"))
        edited = await call(3)
        assert (edited.synced, edited.forgotten) == (1, 1)
        assert await _synced(engine) == ["DB is x", "Postgres runs on port 5434"]

        (workspace / ".ralph" / "agent" / "memories.md").unlink()
        missing = await call(4)
        assert missing.forgotten == 0 and "no memories.md" in " ".join(missing.skipped)
        assert await _synced(engine) == ["DB is x", "Postgres runs on port 5434"]

        _write(workspace)  # the agent deleted them all: now they go
        emptied = await call(5)
        assert emptied.forgotten == 2
        assert await _synced(engine) == []


def _task(task_id: str, title: str, status: str) -> str:
    return json.dumps(
        {"id": task_id, "title": title, "status": status, "priority": 2, "blocked_by": []}
    )


def _with_one_open_task(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with no memories and one open task; its tasks file."""
    workspace = tmp_path / "repo"
    (workspace / ".ralph" / "agent").mkdir(parents=True)
    _write(workspace)
    tasks = workspace / ".ralph" / "agent" / "tasks.jsonl"
    tasks.write_text(_task("task-1-aaaa", "Parse the CSV header", "open") + "\n")
    return workspace, tasks


async def test_an_iterations_record_says_which_tasks_were_added_closed_or_failed(
    tmp_path: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    workspace, tasks = _with_one_open_task(tmp_path)
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        call = _caller(workspace, _Engine(engine, writable=True))

        await call(1)
        tasks.write_text(
            _task("task-1-aaaa", "Parse the CSV header", "closed")
            + "\n"
            + _task("task-2-bbbb", "Upload to the bank's SFTP", "failed")
            + "\n"
            + _task("task-3-cccc", "Write the README", "open")
            + "\n"
        )
        assert (await call(2)).recorded == 1
        first = await engine.iteration(1)
        assert "closed task: Parse the CSV header" in first.summary
        assert "failed task: Upload to the bank's SFTP" in first.summary
        assert "added task: Write the README" in first.summary
        assert not first.success
        assert first.error == "task failed: Upload to the bank's SFTP"


async def test_a_record_made_again_after_the_hook_died_keeps_the_first_and_moves_on(
    tmp_path: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    workspace, tasks = _with_one_open_task(tmp_path)
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        call = _caller(workspace, _Engine(engine, writable=True))
        await call(1)
        state = workspace / STATE_FILE
        before = state.read_text(encoding="utf-8")
        tasks.write_text(_task("task-1-aaaa", "Parse the CSV header", "closed") + "\n")
        assert (await call(2)).recorded == 1
        # The hook died after its record, before saving its state; meanwhile more happened,
        # so the record it makes again is not the same request under the same key.
        state.write_text(before, encoding="utf-8")
        tasks.write_text(_task("task-2-bbbb", "Upload to the bank's SFTP", "open") + "\n")
        again = await call(2)
        assert "iteration 1 was recorded before" in " ".join(again.skipped)
        first = await engine.iteration(1)
        assert first is not None and "closed task: Parse the CSV header" in first.summary
        assert "Upload" not in first.summary
        assert (await call(3)).recorded == 2  # the state moved on past iteration 1
