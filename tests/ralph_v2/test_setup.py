"""``ralph-context init --ralph v2``: the ralph.yml it writes passes Ralph's config rules
(contracts §1.1, checked here by our own validator), keeps the user's comments and keys,
refuses contradictions, and a second run changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp
import yaml
from mcp import StdioServerParameters

from ralph_context.integrations.ralph_v2.payload import EVENTS

PHASE_EVENTS = {f"{phase}.{event}" for phase in ("pre", "post") for event in EVENTS}
FORBIDDEN = {
    "global",
    "globals",
    "global_defaults",
    "global_hooks",
    "scope",
    "parallel",
    "parallelism",
    "max_parallel",
    "concurrency",
    "run_in_parallel",
}


def ralph_accepts(document: dict[str, Any]) -> list[str]:
    """What Ralph v2.10.1's config validator would reject (``config.rs``)."""
    problems = []
    hooks = document.get("hooks", {})
    problems += [f"hooks.{k}" for k in FORBIDDEN & set(hooks)]
    if not isinstance(hooks.get("enabled", False), bool):
        problems.append("hooks.enabled")
    for phase_event, specs in (hooks.get("events") or {}).items():
        if phase_event not in PHASE_EVENTS:
            problems.append(f"unknown event {phase_event}")
        for spec in specs:
            where = f"{phase_event}:{spec.get('name')}"
            if not isinstance(spec.get("name"), str) or not spec["name"]:
                problems.append(f"{where} name")
            command = spec.get("command")
            if not isinstance(command, list) or not command or not command[0]:
                problems.append(f"{where} command")
            if spec.get("on_error") not in ("warn", "block", "suspend"):
                problems.append(f"{where} on_error")
            for key in ("timeout_seconds", "max_output_bytes"):
                if key in spec and not (isinstance(spec[key], int) and spec[key] > 0):
                    problems.append(f"{where} {key}")
            if "suspend_mode" in spec and spec.get("on_error") != "suspend":
                problems.append(f"{where} suspend_mode")
            problems += [f"{where} {k}" for k in FORBIDDEN & set(spec)]
    return problems


def init(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ralph_context",
            "init",
            "--ralph",
            "v2",
            "--project",
            str(project),
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_fresh_project_gets_memories_hooks_and_the_agents_mcp_config(tmp_path: Path) -> None:
    done = init(tmp_path)
    assert done.returncode == 0, done.stderr
    document = yaml.safe_load((tmp_path / "ralph.yml").read_text())
    assert ralph_accepts(document) == []
    assert document["memories"] == {"enabled": True, "inject": "auto", "budget": 2000}
    assert document["hooks"]["enabled"] is True
    assert set(document["hooks"]["events"]) == {
        "post.iteration.start",
        "post.loop.complete",
        "post.loop.error",
    }
    for specs in document["hooks"]["events"].values():
        (spec,) = specs
        assert spec["name"] == "ralph-context" and spec["on_error"] == "warn"
        assert spec["command"][1:4] == ["-m", "ralph_context", "hook"]
        assert Path(spec["command"][0]).is_file()  # Ralph runs argv[0] without a shell
    args = document["cli"]["args"]
    mcp_file = Path(args[args.index("--mcp-config") + 1])
    assert mcp_file.is_absolute() and mcp_file.is_file()
    server = json.loads(mcp_file.read_text())["mcpServers"]["ralph-context"]
    assert server["args"] == ["serve"]
    before = (tmp_path / "ralph.yml").read_text()
    again = init(tmp_path)
    assert again.returncode == 0 and "already set up" in again.stdout
    assert (tmp_path / "ralph.yml").read_text() == before


def test_the_users_comments_and_keys_stay_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    original = (
        "# my loop\n"
        "cli:\n  backend: claude  # the agent\n  args: [--model, sonnet]\n"
        "event_loop:\n  max_iterations: 40\n"
        "memories:\n  enabled: true\n  budget: 900   # small on purpose\n"
        "hooks:\n  enabled: true\n  events:\n    post.iteration.start:\n"
        "      - name: lint\n        command: [./bin/lint]\n        on_error: warn\n"
    )
    path = tmp_path / "ralph.yml"
    path.write_text(original)
    dry = init(tmp_path, "--dry-run")
    assert dry.returncode == 0 and "+      - name: ralph-context" in dry.stdout, dry.stdout
    assert path.read_text() == original
    assert not (tmp_path / ".ralph").exists()
    assert init(tmp_path).returncode == 0
    text = path.read_text()
    for kept in ("# my loop", "# the agent", "# small on purpose"):
        assert kept in text
    document = yaml.safe_load(text)
    assert ralph_accepts(document) == []
    assert document["event_loop"] == {"max_iterations": 40}
    assert document["memories"]["budget"] == 900  # the user's budget is theirs
    names = [h["name"] for h in document["hooks"]["events"]["post.iteration.start"]]
    assert names == ["lint", "ralph-context"]  # theirs first, as they run in order
    assert document["cli"]["args"][:2] == ["--model", "sonnet"]


def test_contradicting_values_are_refused_naming_the_key(tmp_path: Path) -> None:
    cases = {
        "memories:\n  inject: none\n": "memories.inject is 'none'",
        "memories:\n  budget: 10\n": None,  # no enabled key: Ralph's default is false; we set it
        "hooks:\n  enabled: false\n": "hooks.enabled is False",
        "cli:\n  args: [--mcp-config, /elsewhere.json]\n": "already passes --mcp-config",
    }
    for text, refusal in cases.items():
        project = tmp_path / str(abs(hash(text)))
        project.mkdir()
        (project / "ralph.yml").write_text(text)
        done = init(project)
        if refusal is None:
            assert done.returncode == 0, done.stderr
            assert yaml.safe_load((project / "ralph.yml").read_text())["memories"]["enabled"]
            continue
        assert done.returncode == 2 and refusal in done.stderr, (text, done.stderr)
        assert (project / "ralph.yml").read_text() == text


def test_plain_init_suggests_ralph_v2_in_a_v2_project(tmp_path: Path) -> None:
    (tmp_path / ".ralph").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "ralph_context", "init", "--project", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0
    assert "init --ralph v2" in done.stderr


def test_the_agents_server_uses_the_loop_workspaces_store(tmp_path: Path) -> None:
    """Ralph starts the agent with RALPH_WORKSPACE_ROOT (a worktree for a parallel loop), and
    the agent starts our server from the MCP config init wrote: the server must open that
    workspace's store, the one the hook opens, wherever it was started."""
    project, worktree, elsewhere = tmp_path / "main", tmp_path / "worktree", tmp_path / "cwd"
    for folder in (project, worktree, elsewhere):
        folder.mkdir()
    assert init(project).returncode == 0
    document = yaml.safe_load((project / "ralph.yml").read_text())
    args = document["cli"]["args"]
    mcp_file = Path(args[args.index("--mcp-config") + 1])
    (entry,) = json.loads(mcp_file.read_text())["mcpServers"].values()
    assert "RALPH_CONTEXT_CONFIG" not in entry.get("env", {})  # nothing pins the main checkout
    (worktree / "ralph.yml").write_text((project / "ralph.yml").read_text())  # git checks it out
    env = {k: v for k, v in os.environ.items() if k != "RALPH_CONTEXT_CONFIG"}
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={**env, "RALPH_WORKSPACE_ROOT": str(worktree)},
        cwd=str(elsewhere),
    )
    store = Path(anyio.run(_store_one_item, params))
    assert store.resolve().is_relative_to(worktree.resolve())
    assert not (project / ".agent").exists() and not (elsewhere / ".agent").exists()


async def _store_one_item(params: StdioServerParameters) -> str:
    """Store an item through the server; returns the store its health report names."""
    with anyio.fail_after(120):
        async with mcp.Client(params) as client:
            stored = await client.call_tool(
                "store_context",
                {"content": "Worktree loops keep their own memory", "context_type": "output"},
            )
            assert not stored.is_error, stored.content
            stats = await client.call_tool("get_context_stats", {})
            health = await client.call_tool("health_check", {})
    assert stats.structured_content is not None and stats.structured_content["items"] == 1
    assert health.structured_content is not None
    return str(health.structured_content["store"])


def test_another_backend_gets_no_claude_flag_and_a_note(tmp_path: Path) -> None:
    """Ralph appends cli.args to every backend's command line; --mcp-config is Claude's."""
    (tmp_path / "ralph.yml").write_text("cli:\n  backend: gemini\n")
    done = init(tmp_path)
    assert done.returncode == 0, done.stderr
    document = yaml.safe_load((tmp_path / "ralph.yml").read_text())
    assert ralph_accepts(document) == []
    assert "--mcp-config" not in (document["cli"].get("args") or [])
    assert document["hooks"]["enabled"] is True  # the hook works with any backend
    note = " ".join(done.stderr.split())
    assert "cli.backend is 'gemini': --mcp-config is Claude Code's flag" in note
    assert (tmp_path / ".ralph" / "ralph-context.mcp.json").is_file()
    assert "already set up" in init(tmp_path).stdout  # and a second run changes nothing
