"""A search (``get_relevant_context``, a pull) still finds memory about code deleted since,
and its text says so; memory about a rewritten file is marked as changed, about an
untouched one as it was. The server in process on a real engine, in a real git
repository, through the real MCP client."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp
import pytest
from mcp.types import TextContent

from ralph_context.engine import Engine
from ralph_context.packs.toolkit import EngineHolder
from ralph_context.server.app import build_server
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

pytestmark = pytest.mark.model


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_search_finds_memory_about_deleted_code_and_marks_it(
    tmp_path: Path,
    make_settings: SettingsFactory,
    shared_model: Loader,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = init_repo(tmp_path / "repo")
    start_the_code(repo)
    monkeypatch.chdir(repo)  # the server's project root
    settings = make_settings(lifecycle={"auto_run": False})
    holder = EngineHolder(settings)
    server = build_server(holder)
    with anyio.fail_after(60):
        async with Engine(settings, model_loader=shared_model) as engine:
            holder.engine = engine
            for note in NOTES:
                await engine.store(note, "file")
            move_the_code(repo)
            async with mcp.Client(server) as client:
                answer = await client.call_tool(
                    "get_relevant_context",
                    {"query": "invoice import headers, timeout and delimiter", "min_score": 0},
                )
    (block,) = answer.content
    assert isinstance(block, TextContent)
    lines = {note: line for line in block.text.splitlines() for note in NOTES if note in line}
    assert set(lines) == {DELETED, CHANGED, UNCHANGED}, block.text
    assert "· src/legacy_parser.py deleted]" in lines[DELETED]
    assert "· src/config.py changed just now]" in lines[CHANGED]
    assert "deleted" not in lines[UNCHANGED] and "changed" not in lines[UNCHANGED]
