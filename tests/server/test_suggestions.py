"""A client that asks for a tool or resource that does not exist is told the nearest ones
that do, through the real MCP client against the server process over stdio."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp
import pytest
from mcp import StdioServerParameters

from ralph_context.server.suggest import closest, unknown_resource, unknown_tool
from tests.server_process import CLI, environment, store_config


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _server(tmp_path: Path, *options: str) -> StdioServerParameters:
    config = store_config(tmp_path / "ralph.yaml", tmp_path / "store")
    return StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "serve", *options],
        env=environment(config),
        cwd=str(tmp_path),
    )


def _text(result: object) -> str:
    return " ".join(getattr(part, "text", "") for part in getattr(result, "content", []))


async def test_an_unknown_tool_or_resource_answers_with_the_nearest_names(tmp_path: Path) -> None:
    with anyio.fail_after(120):
        async with mcp.Client(_server(tmp_path)) as client:
            misspelt = await client.call_tool("stroe_context", {"content": "x"})
            assert misspelt.is_error
            assert "unknown tool 'stroe_context'; did you mean 'store_context'" in _text(misspelt)
            nothing_near = await client.call_tool("no_such_tool", {})
            assert nothing_near.is_error
            listed = _text(nothing_near)
            assert "the tools are:" in listed and "get_relevant_context" in listed
            with pytest.raises(mcp.MCPError, match=r"did you mean 'context://items/\{id\}'"):
                await client.read_resource("context://item/abc")
            served = await client.call_tool("get_context_stats", {})  # the session goes on
            assert not served.is_error


async def test_a_write_tool_on_a_read_only_server_says_why_it_is_missing(tmp_path: Path) -> None:
    with anyio.fail_after(120):
        async with mcp.Client(_server(tmp_path)) as writer:  # make the store first
            await writer.call_tool("get_context_stats", {})
        async with mcp.Client(_server(tmp_path, "--read-only")) as client:
            refused = await client.call_tool("store_context", {"content": "x"})
    assert refused.is_error
    assert "'store_context' changes the store, and this server is read-only" in _text(refused)


def test_a_name_containing_the_request_counts_as_near() -> None:
    names = ["store_context", "store_contexts", "get_skills", "health_check"]
    assert closest("store", names) == ["store_context", "store_contexts"]
    assert closest("health", names) == ["health_check"]
    assert closest("zzz", names) == []
    assert "did you mean 'get_skills'" in unknown_tool("get_skill", names)
    assert unknown_resource("foo://bar", ["context://stats"], []).endswith(
        "the resources are: context://stats"
    )
