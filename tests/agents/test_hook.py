"""``ralph-context hook claude|codex`` as the agents run it, a process per event: with no
server it answers at once with nothing, starts the project's server detached and keeps the
captures for it; with the server up it answers with context; whatever the payload or the
server's state it exits 0; it loads neither LanceDB nor onnxruntime; inside a Ralph v2
iteration with both set up, the events Ralph's hook covers are deferred."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ralph_context.integrations.agents.hook import EVENTS
from ralph_context.integrations.agents.setup import CLAUDE_HOOKS, CODEX_HOOKS
from ralph_context.server.agents.project import SPOOL_FILE, agent_folder, read_server
from tests.agents.conftest import agent_env, wait_for_note
from tests.agents.payloads import EXTRA, failed, payload, prompt
from tests.cli.test_cli import cli


def hook(client: str, stdin: bytes, cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ralph_context", "hook", client],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=agent_env(**env),
        timeout=60,
        check=False,
    )


def traced(trace: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]


def test_the_hooks_init_wires_are_the_events_the_hook_answers() -> None:
    assert EVENTS["claude"] == tuple(spec.event for spec in CLAUDE_HOOKS)
    assert EVENTS["codex"] == tuple(spec.event for spec in CODEX_HOOKS)


def test_without_a_server_the_hooks_answer_nothing_start_one_and_it_stores_their_captures(
    project: Path,
) -> None:
    trace = project.parent / "trace.jsonl"
    error = "ZorblaxError: the flux capacitor table is empty"
    for event in EVENTS["claude"]:
        data = payload(event, project / "src", **EXTRA[event])
        if event == "PostToolUseFailure":
            data = failed(project / "src", "python3 flux.py", error)
        done = hook(
            "claude", json.dumps(data).encode(), project, RALPH_CONTEXT_HOOK_TRACE=str(trace)
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    actions = {str(line["event"]): str(line["action"]) for line in traced(trace)}
    assert actions["SessionStart"] == "server starting; nothing injected"
    assert actions["PostToolUseFailure"].endswith("kept for it")
    # No store yet (nothing injected), or the server's fresh one read-only: an empty answer.
    assert actions["UserPromptSubmit"].endswith("nothing injected") or (
        "read-only" in actions["UserPromptSubmit"]
    )
    # One server for the project, found from a subfolder: it stores what was kept...
    wait_for_note(project)
    note = read_server(project)
    assert note is not None and note.base_url.startswith("http://127.0.0.1:")
    for _ in range(120):  # the server takes the spool once it listens
        if not (agent_folder(project) / SPOOL_FILE).exists():
            break
        time.sleep(0.5)
    # ...and answers the next prompt with it. (A hook gives up after 0.8 s and answers
    # nothing: on a loaded machine a fresh server's first search can take longer.)
    for attempt in range(5):
        # A new session each time: one that timed out may have had the item already.
        question = prompt(project, "Why was the flux capacitor table empty?", session=f"s{attempt}")
        done = hook("claude", json.dumps(question).encode(), project)
        if done.stdout:
            break
        time.sleep(1)
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "UserPromptSubmit"
    assert error in answer["additionalContext"]


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b'{"session_id": "x"}'], ids=repr)
def test_a_bad_payload_exits_0_and_leaves_one_line_in_the_projects_hooks_log(
    stdin: bytes, project: Path
) -> None:
    done = hook("claude", stdin, project / ".")
    assert done.returncode == 0 and done.stdout == b""
    assert done.stderr.decode().startswith("ralph-context hook claude ?: skipped (PayloadProblem")
    (line,) = (agent_folder(project) / "hooks.log").read_text(encoding="utf-8").splitlines()
    assert "skipped (PayloadProblem: the hook payload" in line
    assert (
        read_server(project) is None
        and not (agent_folder(project) / "agent-server.starting").exists()
    )


def test_the_hook_loads_neither_lancedb_nor_onnxruntime_nor_pydantic(project: Path) -> None:
    data = json.dumps(payload("UserPromptSubmit", project, prompt="hi")).encode()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ralph_context", "hook", "claude"],
        input=data,
        capture_output=True,
        cwd=project,
        env=agent_env(),
        timeout=60,
        check=True,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()}
    assert "ralph_context.integrations.agents.hook" in imported
    heavy = {"lancedb", "onnxruntime", "pydantic", "typer", "rich", "structlog"}
    assert {name for name in imported if name.split(".")[0] in heavy} == set()


def test_with_ralph_v2_and_claude_set_up_ralphs_hook_injects_once_per_iteration(
    project: Path,
) -> None:
    tmp_path = project
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
        assert not action(event, **in_loop).startswith("deferred:")
    # A person's own claude session in the same project: nothing deferred.
    environ = {k: v for k, v in agent_env().items() if k != "RALPH_WORKSPACE_ROOT"}
    data = json.dumps(payload("UserPromptSubmit", tmp_path, prompt="x")).encode()
    subprocess.run(
        [sys.executable, "-m", "ralph_context", "hook", "claude"],
        input=data,
        cwd=tmp_path,
        env={**environ, "RALPH_CONTEXT_HOOK_TRACE": str(trace)},
        timeout=60,
        check=True,
    )
    assert not json.loads(trace.read_text(encoding="utf-8").splitlines()[-1])["action"].startswith(
        "deferred:"
    )


def test_without_ralph_v2s_hook_the_claude_hook_defers_to_nothing(project: Path) -> None:
    tmp_path = project
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
    assert not json.loads(trace.read_text(encoding="utf-8"))["action"].startswith("deferred:")
