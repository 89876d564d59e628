"""``ralph-context init``: the project ``.mcp.json`` registers a server that really starts."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import anyio
import mcp
import pytest
from mcp import StdioServerParameters

from tests.cli.test_cli import cli


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ralph.yml").write_text(
        "agent: claude\nmax_iterations: 10\n"  # Ralph's own keys sit beside our block
        "learning:\n  mcp_context:\n    storage:\n      path: memory-store\n"
        "    server:\n      port: 9123\n",
        encoding="utf-8",
    )
    return tmp_path


def read(project: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))
    return loaded


def test_init_writes_an_entry_that_starts_the_server(project: Path) -> None:
    done = cli("init", "--project", str(project))
    assert done.stdout.startswith("created ")
    entry = read(project)["mcpServers"]["ralph-context"]  # type: ignore[index]
    assert entry["args"] == ["serve"]
    assert entry["env"] == {"RALPH_CONTEXT_CONFIG": str((project / "ralph.yml").resolve())}

    async def list_tools() -> set[str]:
        params = StdioServerParameters(
            command=entry["command"],
            args=entry["args"],
            env={**os.environ, **entry["env"]},
            cwd=str(project.parent),  # clients may start it anywhere
        )
        with anyio.fail_after(120):
            async with mcp.Client(params) as client:
                return {tool.name for tool in (await client.list_tools()).tools}

    assert "get_relevant_context" in anyio.run(list_tools)
    assert (project / "memory-store").is_dir()  # the store is anchored at the config


def test_init_keeps_other_servers_and_is_idempotent(project: Path) -> None:
    mine = {"command": "other-server", "args": ["--flag"]}
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"other": mine}, "note": "kept"}), encoding="utf-8"
    )
    assert cli("init", "--project", str(project)).stdout.startswith("added ")
    assert cli("init", "--project", str(project)).stdout.startswith("unchanged ")
    document = read(project)
    assert document["note"] == "kept"
    assert document["mcpServers"]["other"] == mine  # type: ignore[index]
    http = cli("init", "--project", str(project), "--transport", "http")
    assert http.stdout.startswith("updated ")
    entry = read(project)["mcpServers"]["ralph-context"]  # type: ignore[index]
    assert entry.pop("type") == "http" and entry.pop("url") == "http://127.0.0.1:9123/mcp"
    # Claude Code runs the helper for the request headers: the store's owner token, which
    # the project's HTTP server requires (the token itself is not in the file).
    helper = shlex.split(entry.pop("headersHelper"))
    assert entry == {}
    assert helper[1:] == [
        "token",
        "owner",
        "--header",
        "--config",
        str((project / "ralph.yml").resolve()),
    ]
    printed = subprocess.run(helper, cwd=project.parent, capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    header = json.loads(printed.stdout)
    token = (project / "memory-store" / "owner.token").read_text(encoding="utf-8").strip()
    assert header == {"Authorization": f"Bearer {token}"}
    assert (project / "memory-store" / "owner.token").stat().st_mode & 0o777 == 0o600


def test_init_refuses_a_broken_file_and_leaves_it_alone(project: Path) -> None:
    broken = '{"mcpServers": {"other": '
    (project / ".mcp.json").write_text(broken, encoding="utf-8")
    done = cli("init", "--project", str(project), check=False)
    assert done.returncode == 1
    assert "is not readable JSON" in done.stderr and "fix or remove it" in done.stderr
    assert (project / ".mcp.json").read_text(encoding="utf-8") == broken
    listed = cli("init", "--project", str(project), "--transport", "ftp", check=False)
    assert listed.returncode == 2
    assert "'ftp' is not one of 'stdio', 'http'" in " ".join(listed.stderr.replace("│", "").split())
