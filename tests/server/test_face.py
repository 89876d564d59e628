"""The MCP face: what ``tools/list`` offers, and costs, under each ``packs:``, through the real
``mcp`` client against the ``serve`` process; and the README's table of it, remeasured."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import mcp
import pytest
from mcp import StdioServerParameters
from mcp.types import TextContent, Tool

from benchmarks.face.run import listed_bytes, measure, table
from benchmarks.serving import free_port
from ralph_context.packs import PACK_TOOLS
from ralph_context.server.compact import compact_tool
from tests.server.mcp_scenario import (
    CORE_TOOLS,
    CURATION_TOOLS,
    EVALUATION_TOOLS,
    INFERENCE_TOOLS,
    PROJECT_TOOLS,
    PROMPT_LEARNING_TOOLS,
)
from tests.server_process import CLI, environment

REPO = Path(__file__).resolve().parents[2]
MAX_TOOLS = 12
MAX_BYTES = 16_000
PACKS = {
    "prompts": PROMPT_LEARNING_TOOLS,
    "project": PROJECT_TOOLS,
    "evaluation": EVALUATION_TOOLS,
    "curation": CURATION_TOOLS,
}


@pytest.fixture
def anyio_backend() -> str:
    """Server subprocesses cost seconds each: one backend."""
    return "asyncio"


def _server(config: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve"], env=environment(config), cwd=str(config.parent)
    )


def _config(folder: Path, *sections: str) -> Path:
    """A ``ralph.yaml`` in ``folder``: a store there, ``sections`` (YAML lines) below it."""
    path = folder / "ralph.yaml"
    block = "".join(f"    {line}\n" for line in sections)
    path.write_text(
        f"learning:\n  mcp_context:\n    storage:\n      path: store\n{block}", encoding="utf-8"
    )
    return path


def _error(result: object) -> str:
    assert getattr(result, "is_error", False), result
    (first,) = getattr(result, "content", [])
    assert isinstance(first, TextContent)
    return first.text


async def test_the_default_ralph_yaml_lists_the_core_tools_within_twelve_and_16000_bytes(
    tmp_path: Path,
) -> None:
    config = tmp_path / "ralph.yaml"
    shutil.copy(REPO / "ralph.yaml", config)  # its store lands beside the copy
    with anyio.fail_after(120):
        async with mcp.Client(_server(config)) as client:
            tools = (await client.list_tools()).tools
            unserved = await client.call_tool("retrieve_prompts", {"query": "x"})
            no_model = await client.call_tool("complete", {})
    assert {tool.name for tool in tools} == CORE_TOOLS
    assert len(tools) <= MAX_TOOLS
    assert listed_bytes(tools) <= MAX_BYTES, listed_bytes(tools)
    for tool in tools:  # the typed contract stays: every answer's schema, every hint
        assert tool.output_schema is not None and tool.annotations is not None, tool.name
        assert tool.input_schema.get("additionalProperties") is False, tool.name
    # A call to a pack's tool is told the pack to name, and how.
    assert _error(unserved) == (
        "tool 'retrieve_prompts' is in the prompts pack, which this server does not serve: "
        "add prompts to learning.mcp_context.packs in ralph.yaml (packs: [prompts]) and "
        "restart the server"
    )
    told = _error(no_model)
    assert "evaluation pack" in told and "inference.servers" in told, told


@pytest.mark.parametrize("pack", list(PACKS))
async def test_a_pack_named_in_ralph_yaml_adds_its_tools_and_no_other(
    tmp_path: Path, pack: str
) -> None:
    config = _config(tmp_path, f"packs: [{pack}]", "inference:", "  register_from_env: false")
    with anyio.fail_after(120):
        async with mcp.Client(_server(config)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            other = next(name for name in PACKS if name != pack)
            refused = await client.call_tool(sorted(PACKS[other])[0], {})
    assert names == CORE_TOOLS | PACKS[pack]
    assert f"in the {other} pack" in _error(refused)


async def test_the_language_model_tools_are_listed_only_with_an_inference_server(
    tmp_path: Path,
) -> None:
    without = _config(tmp_path, "packs: [evaluation]", "inference:", "  register_from_env: false")
    served = tmp_path / "served"
    served.mkdir()
    # A server nothing listens on: listing tools asks it nothing.
    url = f"http://127.0.0.1:{free_port()}"
    with_server = _config(
        served,
        "packs: [evaluation]",
        "inference:",
        "  register_from_env: false",
        "  servers:",
        f"    - {{kind: lmstudio, base_url: '{url}'}}",
    )
    with anyio.fail_after(180):
        async with mcp.Client(_server(without)) as client:
            plain = {tool.name for tool in (await client.list_tools()).tools}
            asked = await client.call_tool("complete", {})
        async with mcp.Client(_server(with_server)) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
    assert plain == CORE_TOOLS | EVALUATION_TOOLS
    assert _error(asked).startswith(
        "tool 'complete' asks a language model, and this server has none: add "
        "learning.mcp_context.inference.servers to ralph.yaml"
    )
    assert listed == CORE_TOOLS | EVALUATION_TOOLS | INFERENCE_TOOLS


async def test_the_readme_table_is_what_the_face_measures() -> None:
    """The README's numbers are measured, not written: rerun ``python -m
    benchmarks.face.run`` and paste its table when a tool's listing changes."""
    with anyio.fail_after(60):
        measured = table(await measure())
    assert measured in (REPO / "README.md").read_text(encoding="utf-8"), measured


def test_the_pack_catalog_names_the_tools_each_pack_registers() -> None:
    """``PACK_TOOLS`` tells a client which pack serves a tool; the tests above show each
    pack registers the sets compared here."""
    assert set(PACK_TOOLS) == set(PACKS)
    for pack, names in PACKS.items():
        expected = names | (INFERENCE_TOOLS if pack == "evaluation" else set())
        assert set(PACK_TOOLS[pack]) == expected, pack  # type: ignore[index]


def test_a_listing_drops_titles_and_output_prose_and_keeps_every_constraint() -> None:
    tool = Tool(
        name="t",
        description="First line\n    wrapped.\n\n    Second paragraph.",
        input_schema={
            "type": "object",
            "title": "tArguments",
            "properties": {
                "title": {"type": "string", "title": "Title", "maxLength": 5},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            },
            "$defs": {"M": {"description": "A docstring.", "type": "object", "title": "M"}},
        },
        output_schema={
            "type": "object",
            "description": "Out.",
            "properties": {
                "when": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "kind": {"anyOf": [{"enum": ["a"], "type": "string"}, {"type": "null"}]},
                "n": {"type": "integer", "default": 0, "minimum": 0, "description": "Count."},
            },
            "required": ["when", "kind", "n"],
        },
    )
    listed = compact_tool(tool)
    assert listed.description == "First line wrapped.\n\nSecond paragraph."
    assert listed.input_schema == {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 5},  # an argument named title stays
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "$defs": {"M": {"type": "object"}},
    }
    assert listed.output_schema == {
        "type": "object",
        "properties": {
            "when": {"type": ["string", "null"]},
            # An enum would refuse the null a type list allows: kept as it was.
            "kind": {"anyOf": [{"enum": ["a"], "type": "string"}, {"type": "null"}]},
            "n": {"type": "integer", "minimum": 0},
        },
        "required": ["when", "kind", "n"],
    }
