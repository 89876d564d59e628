"""Property-based fuzzing of every tool through the real MCP client against the real server
(stdio): a bounded number of generated calls here, and for every tool a call with a lone
surrogate and one nested 1,000 levels; ``python -m benchmarks.fuzz.run`` makes 10,000 or
more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest

from benchmarks.fuzz.run import CONFIG, fuzz, server_params
from benchmarks.serving import free_port
from tests.server.mcp_scenario import ALL_PACK_TOOLS, CORE_TOOLS

# Generated calls in CI: the whole test stays well under two minutes on this machine.
CI_CALLS = 300


def test_generated_calls_answer_and_change_nothing_stored(tmp_path: Path) -> None:
    report = fuzz(server_params(tmp_path), CI_CALLS)
    assert report.crashes == []  # every call answered, none with a bare error
    assert report.calls >= CI_CALLS + report.unparseable_calls
    # Each unparseable call was answered with a JSON-RPC error saying why (and some of the
    # generated calls were too).
    assert report.unparseable_calls >= 2 * 25
    assert report.refused >= report.unparseable_calls
    # Both kinds of answer happen: the calls reach the tools, not only validation.
    assert report.results > 0
    assert report.tool_errors > 0
    assert len(report.per_tool) >= 25
    assert report.restarts == dict.fromkeys(report.restarts, 0)
    assert report.status == "healthy"
    assert not report.stored_items_changed


def _unbounded(schema: dict[str, Any], defs: dict[str, Any], path: str) -> list[str]:
    """Every number without a maximum and every list without a maximum length in ``schema``,
    nested models and list entries included."""
    if "$ref" in schema:
        return _unbounded(defs[schema["$ref"].split("/")[-1]], defs, path)
    found = []
    for option in schema.get("anyOf", []):
        found += _unbounded(option, defs, path)
    kind = schema.get("type")
    if kind in ("integer", "number") and "maximum" not in schema:
        found.append(path)
    if kind == "array":
        if "maxItems" not in schema:
            found.append(path)
        found += _unbounded(schema.get("items", {}), defs, f"{path}[]")
    for name, spec in schema.get("properties", {}).items():
        found += _unbounded(spec, defs, f"{path}.{name}")
    return found


# A server subprocess costs seconds: one backend.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_every_tool_is_closed_and_every_number_and_list_bounded(tmp_path: Path) -> None:
    """Unknown arguments are refused (the schema says so), and no number or list any tool
    takes is unbounded: a number without a maximum reaches a 64-bit column or a loop bound
    sooner or later, a list without one a loop over it."""
    params = server_params(tmp_path)
    # A model server too (nothing listens: listing asks it nothing), so every tool is listed.
    config = tmp_path / "ralph.yaml"
    config.write_text(
        f"{CONFIG}    inference:\n      register_from_env: false\n"
        f"      servers: [{{kind: lmstudio, base_url: 'http://127.0.0.1:{free_port()}'}}]\n",
        encoding="utf-8",
    )
    with anyio.fail_after(60):
        async with mcp.Client(params) as client:
            tools = (await client.list_tools()).tools
    assert {tool.name for tool in tools} == CORE_TOOLS | ALL_PACK_TOOLS
    unbounded = []
    for tool in tools:
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        unbounded += _unbounded(tool.input_schema, tool.input_schema.get("$defs", {}), tool.name)
    assert unbounded == []
