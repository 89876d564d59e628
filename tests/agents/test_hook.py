"""``ralph-context hook claude|codex``: exit 0 and no stdout for every event, whatever the
payload; a failure is one line in ``hooks.log``; LanceDB and onnxruntime stay unimported;
inside a Ralph v2 iteration with both set up, the events Ralph's hook covers are deferred."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralph_context.agents.hook import EVENTS
from ralph_context.agents.setup import CLAUDE_HOOKS, CODEX_HOOKS
from tests.test_cli import cli

SESSION = "ab96d860-7c35-4883-b362-067d2c28214f"


def payload(event: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    """A payload shaped like those Claude Code 2.1.332 sends (common fields first)."""
    return {
        "session_id": SESSION,
        "transcript_path": f"/home/user/.claude/projects/-proj/{SESSION}.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


EXTRA: dict[str, dict[str, Any]] = {
    "SessionStart": {"source": "startup"},
    "UserPromptSubmit": {"prompt": "Check the import."},
    "PostToolUse": {
        "tool_name": "Bash",
        "tool_input": {"command": "echo ok", "description": "run it"},
        "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
        "tool_use_id": "toolu_0002",
        "duration_ms": 38,
    },
    "PostToolUseFailure": {
        "tool_name": "Bash",
        "tool_input": {"command": "python3 -c 'import zz'", "description": "run it"},
        "tool_use_id": "toolu_0002",
        "error": "Exit code 1\nModuleNotFoundError: No module named 'zz'",
        "is_interrupt": False,
        "duration_ms": 170,
    },
    "Stop": {"stop_hook_active": False, "last_assistant_message": "Done."},
    "PreCompact": {"trigger": "auto", "custom_instructions": ""},
    "SessionEnd": {"reason": "other"},
}


def hook(client: str, stdin: bytes, cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ralph_context", "hook", client],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )


def test_the_hooks_init_wires_are_the_events_the_hook_answers() -> None:
    assert EVENTS["claude"] == tuple(spec.event for spec in CLAUDE_HOOKS)
    assert EVENTS["codex"] == tuple(spec.event for spec in CODEX_HOOKS)


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_every_event_exits_0_with_nothing_on_stdout(client: str, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    for event in EVENTS[client]:
        data = json.dumps(payload(event, tmp_path, **EXTRA[event])).encode()
        done = hook(client, data, tmp_path, RALPH_CONTEXT_HOOK_TRACE=str(trace))
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert [line["event"] for line in lines] == list(EVENTS[client])
    assert {line["action"] for line in lines} == {
        "none: behaviour per event is not implemented yet"
    }
    assert not (tmp_path / ".agent").exists()  # nothing failed, nothing logged


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b'{"session_id": "x"}'], ids=repr)
def test_a_bad_payload_exits_0_and_leaves_one_line_in_the_stores_folder(
    stdin: bytes, tmp_path: Path
) -> None:
    (tmp_path / "ralph.yaml").write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: mem/store\n", encoding="utf-8"
    )
    done = hook("claude", stdin, tmp_path)
    assert done.returncode == 0 and done.stdout == b""
    assert done.stderr.decode().startswith("ralph-context hook claude ?: skipped (PayloadProblem")
    (line,) = (tmp_path / "mem" / "hooks.log").read_text(encoding="utf-8").splitlines()
    assert "skipped (PayloadProblem: the hook payload" in line


def test_the_hook_loads_neither_lancedb_nor_onnxruntime(tmp_path: Path) -> None:
    data = json.dumps(payload("UserPromptSubmit", tmp_path, prompt="hi")).encode()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ralph_context", "hook", "claude"],
        input=data,
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()}
    assert "ralph_context.agents.hook" in imported
    heavy = {name for name in imported if name.split(".")[0] in {"lancedb", "onnxruntime"}}
    assert heavy == set()


def test_with_ralph_v2_and_claude_set_up_ralphs_hook_injects_once_per_iteration(
    tmp_path: Path,
) -> None:
    cli("init", "--project", str(tmp_path), "--ralph", "v2", "--agent", "claude")
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert "UserPromptSubmit" in settings["hooks"]
    assert "memories" in (tmp_path / "ralph.yml").read_text(encoding="utf-8")
    trace = tmp_path / "trace.jsonl"

    def action(event: str, **env: str) -> str:
        data = json.dumps(payload(event, tmp_path, **EXTRA[event])).encode()
        assert (
            hook("claude", data, tmp_path, RALPH_CONTEXT_HOOK_TRACE=str(trace), **env).stdout == b""
        )
        last: str = json.loads(trace.read_text(encoding="utf-8").splitlines()[-1])["action"]
        return last

    in_loop = {"RALPH_WORKSPACE_ROOT": str(tmp_path)}
    # Inside an iteration: memories.md (Ralph's injection) carries the context; the Claude
    # hook adds none on the same iteration's session start or prompt, records no turn.
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert action(event, **in_loop).startswith("deferred:")
    # Codex as Ralph's backend: the same events are Ralph's.
    data = json.dumps(payload("UserPromptSubmit", tmp_path, prompt="x")).encode()
    hook("codex", data, tmp_path, RALPH_CONTEXT_HOOK_TRACE=str(trace), **in_loop)
    assert json.loads(trace.read_text(encoding="utf-8").splitlines()[-1])["action"].startswith(
        "deferred:"
    )
    # What Ralph has no hook for stays the Claude hook's, inside the loop too.
    for event in ("PostToolUseFailure", "PostToolUse", "SessionEnd"):
        assert action(event, **in_loop).startswith("none:")
    # A person's own claude session in the same project: nothing deferred.
    environ = {k: v for k, v in os.environ.items() if k != "RALPH_WORKSPACE_ROOT"}
    data = json.dumps(payload("UserPromptSubmit", tmp_path, prompt="x")).encode()
    subprocess.run(
        [sys.executable, "-m", "ralph_context", "hook", "claude"],
        input=data,
        cwd=tmp_path,
        env={**environ, "RALPH_CONTEXT_HOOK_TRACE": str(trace)},
        timeout=60,
        check=True,
    )
    assert json.loads(trace.read_text(encoding="utf-8").splitlines()[-1])["action"].startswith(
        "none:"
    )


def test_without_ralph_v2s_hook_the_claude_hook_defers_to_nothing(tmp_path: Path) -> None:
    cli("init", "--project", str(tmp_path), "--agent", "claude")
    (tmp_path / "ralph.yml").write_text("cli:\n  backend: claude\n", encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    data = json.dumps(payload("UserPromptSubmit", tmp_path, prompt="x")).encode()
    hook(
        "claude",
        data,
        tmp_path,
        RALPH_WORKSPACE_ROOT=str(tmp_path),
        RALPH_CONTEXT_HOOK_TRACE=str(trace),
    )
    assert json.loads(trace.read_text(encoding="utf-8"))["action"].startswith("none:")
