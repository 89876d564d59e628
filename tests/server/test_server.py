"""The MCP server as a subprocess, driven by the official ``mcp`` client over stdio and HTTP."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp
import pytest
from mcp import StdioServerParameters

from tests.server.mcp_scenario import ALL_PACKS_YAML, exercise
from tests.server_process import CLI, environment, owner_client, start_http_server

# The console script, for launchers that would read `-m` as their own option.
SCRIPT = str(Path(sys.executable).with_name("ralph-context"))


@pytest.fixture
def anyio_backend() -> str:
    """Server subprocesses cost seconds each; the engine's trio coverage lives elsewhere."""
    return "asyncio"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "ralph.yaml"
    path.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        "    lifecycle:\n      auto_run: false\n" + ALL_PACKS_YAML + "    prompts:\n"
        "      - name: review\n        description: Review a file\n"
        "        arguments:\n          - Name: file\n            Required: true\n"
        "        content: 'Review {file} carefully.'\n",
        encoding="utf-8",
    )
    return path


async def test_every_tool_resource_and_prompt_over_stdio(config: Path) -> None:
    params = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve"], env=environment(config), cwd=str(config.parent)
    )
    with anyio.fail_after(120):
        async with mcp.Client(params) as client:
            await exercise(client)
            review = await client.get_prompt("review", {"file": "app.py"})
            assert review.messages[0].content.text == "Review app.py carefully."  # type: ignore[union-attr]
            with pytest.raises(mcp.MCPError, match="missing required argument 'file'"):
                await client.get_prompt("review", {})
            prompts = (await client.list_prompts()).prompts
            listed = next(p for p in prompts if p.name == "review")
            assert listed.arguments is not None
            dumped = listed.arguments[0].model_dump(by_alias=True, exclude_none=True)
            assert set(dumped) <= {"name", "description", "required"}  # lowercase only
            assert (dumped["name"], dumped["required"]) == ("file", True)
    assert (config.parent / "store").is_dir()


@pytest.fixture
def http_server(config: Path) -> Iterator[str]:
    """The server over HTTP; its clients send the owner token, as the project's own do."""
    process, url = start_http_server(config)
    try:
        yield url
    finally:
        stderr = process.stop()
    assert process.output == b""  # logs go to stderr, never stdout
    # A person who started it was told what it does, whatever the log level.
    said = [line for line in stderr.splitlines() if line.startswith("ralph-context:")]
    assert said[0].startswith("ralph-context: starting (http); loading the embedding model")
    assert said[1].startswith(f"ralph-context: serving {url} (store ")


async def test_every_tool_resource_and_prompt_over_http(http_server: str, config: Path) -> None:
    with anyio.fail_after(120):
        async with owner_client(http_server, config) as client:
            await exercise(client)


@pytest.mark.skipif(shutil.which("npx") is None, reason="needs Node's npx for the Inspector")
def test_mcp_inspector_cli_lists_and_calls_tools(config: Path) -> None:
    def inspector(*args: str) -> str:
        done = subprocess.run(
            [
                "npx",
                "-y",
                "@modelcontextprotocol/inspector@0.15.0",
                "--cli",
                "-e",
                f"RALPH_CONTEXT_CONFIG={config}",
                SCRIPT,
                "serve",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=config.parent,
            env=environment(config),
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    listed = json.loads(inspector("--method", "tools/list"))
    names = {tool["name"] for tool in listed["tools"]}
    assert {"get_relevant_context", "store_context", "health_check"} <= names
    called = json.loads(inspector("--method", "tools/call", "--tool-name", "get_context_stats"))
    assert called["structuredContent"]["items"] == 0


def test_a_stdio_server_says_it_is_waiting_for_a_client(config: Path) -> None:
    """stdout is the protocol's; the two lines go to stderr, the first before any import."""
    process = subprocess.Popen(
        [*CLI, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(config),
        cwd=config.parent,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline().decode()
        assert first.startswith("ralph-context: starting (stdio); loading the embedding model")
        second = process.stderr.readline().decode()
        assert second.startswith("ralph-context: stdio: waiting for an MCP client (store ")
        assert "tier semantic" in second
        stdout, _ = process.communicate(input=b"", timeout=60)  # EOF: the client left
        assert stdout == b""
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()  # waited for, its pipes closed, whatever failed above
