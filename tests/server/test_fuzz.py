"""Property-based fuzzing of every tool through the real MCP client against the real server
(stdio): a bounded number of generated calls here; ``python -m benchmarks.fuzz.run`` makes
10,000 or more.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp
import pytest

from benchmarks.fuzz.run import fuzz, server_params
from tests.server.mcp_scenario import CONTEXT_TOOLS

# Generated calls in CI: the whole test stays well under two minutes on this machine.
CI_CALLS = 300


def test_generated_calls_answer_and_change_nothing_stored(tmp_path: Path) -> None:
    report = fuzz(server_params(tmp_path), CI_CALLS)
    assert report.crashes == []
    assert report.calls >= CI_CALLS
    # Both kinds of answer happen: the calls reach the tools, not only validation.
    assert report.results > 0
    assert report.tool_errors > 0
    assert len(report.per_tool) >= 25
    assert report.restarts == dict.fromkeys(report.restarts, 0)
    assert report.status == "healthy"
    assert not report.stored_items_changed


# A server subprocess costs seconds: one backend.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_every_tool_is_closed_and_every_context_number_bounded(tmp_path: Path) -> None:
    """Unknown arguments are refused (the schema says so), and no number or list a context
    tool takes is unbounded: one without a maximum reaches a 64-bit column sooner or later."""
    with anyio.fail_after(60):
        async with mcp.Client(server_params(tmp_path)) as client:
            tools = (await client.list_tools()).tools
    assert len(tools) >= 30
    unbounded = []
    for tool in tools:
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        if tool.name not in CONTEXT_TOOLS:
            continue
        for name, spec in tool.input_schema.get("properties", {}).items():
            for option in spec.get("anyOf", [spec]):
                kind = option.get("type")
                if kind in ("integer", "number") and "maximum" not in option:
                    unbounded.append(f"{tool.name}.{name}")
                if kind == "array" and "maxItems" not in option:
                    unbounded.append(f"{tool.name}.{name}")
    assert unbounded == []
