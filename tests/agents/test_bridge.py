"""``ralph-context serve --shared``, the MCP entry ``init --agent`` registers: a real MCP
client over stdio reaches the project's shared server (started by the bridge), and what
it stores is what the agent's hooks are then told: one server, one writer for both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import mcp
import pytest
from mcp import StdioServerParameters

from ralph_context.server.agents.project import read_server
from tests.agents.conftest import agent_env
from tests.agents.payloads import prompt
from tests.server.mcp_scenario import call

pytestmark = pytest.mark.model


async def test_the_mcp_entry_and_the_hooks_share_the_projects_server(project: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ralph_context", "serve", "--shared"],
        env=agent_env(),
        cwd=str(project),
    )
    with anyio.fail_after(180):
        async with mcp.Client(params) as client:
            stored = await call(
                client,
                "store_context",
                content="The zorblax release is cut from the ops/release branch on Fridays.",
                context_type="file",
            )
            note = read_server(project)
            assert note is not None  # the bridge started the shared server
            asked = prompt(project, "Which branch is the zorblax release cut from?")
            done = await anyio.to_thread.run_sync(
                lambda: subprocess.run(
                    [sys.executable, "-m", "ralph_context", "hook", "claude"],
                    input=json.dumps(asked).encode(),
                    capture_output=True,
                    cwd=project,
                    env=agent_env(),
                    timeout=60,
                    check=True,
                )
            )
            context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            assert "ops/release branch on Fridays" in context
            found = await call(client, "get_relevant_context", query="zorblax release branch")
    assert stored["id"] in json.dumps(found)


def test_the_bridge_exits_when_its_stdin_closes_before_any_message(project: Path) -> None:
    """An agent that starts its MCP entry and closes it at once (or dies) leaves no bridge
    behind: before, with nothing relayed, the stdio side waited forever for its stream."""
    done = subprocess.run(
        [sys.executable, "-m", "ralph_context", "serve", "--shared"],
        input=b"",  # a pipe, closed at once
        capture_output=True,
        cwd=project,
        env=agent_env(),
        timeout=180,  # the shared server's start, then the bridge's exit
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"stdio bridged to" in done.stderr
