"""Ralph v2's ``memories.md`` is checked against the workspace's repository: after a file is
deleted and the deletion committed, the memory about it is no longer written; one about a
rewritten file is written marked, after the others; one about an untouched file as it was.
The file is read back with the port of Ralph's own parser."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ralph_context import origin
from ralph_context.engine import Engine
from ralph_context.integrations.ralph_v2.client import _Engine
from ralph_context.integrations.ralph_v2.hook import handle
from ralph_context.integrations.ralph_v2.memories import MANAGED_TAG, parse
from ralph_context.integrations.ralph_v2.payload import read_payload
from tests.git_repo import (
    CHANGED,
    DELETED,
    NOTES,
    UNCHANGED,
    init_repo,
    move_the_code,
    start_the_code,
)
from tests.helpers import Loader, SettingsFactory
from tests.ralph_v2.test_hook_loop import payload


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _written(workspace: Path, memory: _Engine, current: int) -> list[str]:
    """The managed memories one ``post.iteration.start`` writes, as Ralph parses them."""
    start = read_payload(payload(workspace, "post.iteration.start", current))
    with anyio.fail_after(60):
        await handle(start, memory, max_items=5)
    text = (workspace / ".ralph" / "agent" / "memories.md").read_text(encoding="utf-8")
    return [m.content for m in parse(text) if MANAGED_TAG in m.tags]


async def test_memories_md_leaves_out_deleted_code_and_marks_changed_code(
    tmp_path: Path,
    make_settings: SettingsFactory,
    shared_model: Loader,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace = init_repo(tmp_path / "repo")
    start_the_code(
        workspace,
        {
            "PROMPT.md": "# Objective\nFix how the invoice import parses headers, times out "
            "and splits CSV.\n",
            ".ralph/agent/memories.md": "# Memories\n",
        },
    )
    monkeypatch.chdir(workspace)  # the engine's project root: the workspace
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        memory = _Engine(engine, writable=True)
        with origin.recorded_by(origin.RALPH_V2):
            for note in NOTES:
                await engine.store(note, "file")
        before = await _written(workspace, memory, 1)
        assert all(any(note in m for m in before) for note in NOTES)

        move_the_code(workspace)

        after = await _written(workspace, memory, 2)
    assert not any(DELETED in m for m in after), after
    (changed,) = [m for m in after if CHANGED in m]
    (unchanged,) = [m for m in after if UNCHANGED in m]
    assert "src/config.py changed just now]" in changed
    assert "changed" not in unchanged.split("]")[0]
    assert after.index(unchanged) < after.index(changed)
