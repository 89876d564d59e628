"""No secret an agent's hooks see reaches the disk or a log: Claude Code and Codex payloads
carrying secrets (a failure's error, a command, its output, an edit, a prompt, the turn's
last answer) given to ``ralph-context hook claude|codex`` as the agents run it, a process
per event, which hands them to the project's real shared server (``serve --for-agents``,
started by the hook, logging at debug level): first through the spool while no server
answers, then over HTTP. Afterwards every file of the project (the store, the spool's
folder, the server's log, the hooks' log), the hooks' stderr, their trace and an export
are searched for each raw value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ralph_context._logging import LEVEL_ENV
from ralph_context.integrations.agents.hook import TRACE_ENV
from ralph_context.server.agents.project import SPOOL_FILE, STARTING_FILE, agent_folder
from tests.agents.conftest import IDLE_EXIT_MINUTES, stop_servers, wait_for_note
from tests.agents.payloads import failed, payload, prompt, ran
from tests.privacy.secrets import SECRETS
from tests.privacy.test_write_paths import CONTROL, files_holding

pytestmark = pytest.mark.model

DEPLOY = "./deploy.sh --env prod"
# What each event carries; the kind names what must stand in the store instead.
CARRIED = {
    "spooled claude failure": "stripe_key",
    "spooled codex failure": "gitlab_token",
    "command": "github_token",
    "command output": "aws_access_key_id",
    "edit": "openai_key",
    "stop": "slack_token",
    "prompt": "anthropic_key",  # searched with, never stored: found nowhere
}
STORED = {kind for path, kind in CARRIED.items() if path != "prompt"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A git repository whose server (started by a hook, with this environment) logs at
    debug level and is stopped when the test ends."""
    monkeypatch.setenv(LEVEL_ENV, "debug")
    monkeypatch.setenv("RALPH_CONTEXT_AGENTS__IDLE_EXIT_MINUTES", IDLE_EXIT_MINUTES)
    monkeypatch.setenv(TRACE_ENV, str(tmp_path / "trace.jsonl"))
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    yield root
    stop_servers(root)


def hook(client: str, data: dict[str, Any], stderr: list[str]) -> str:
    """One hook call as the agent makes it: its stdout; its stderr is added to ``stderr``."""
    done = subprocess.run(
        [sys.executable, "-m", "ralph_context", "hook", client],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        cwd=data["cwd"],
        env=dict(os.environ),
        timeout=60,
        check=True,
    )
    stderr.append(done.stderr)
    return done.stdout


def wait_until_stored(root: Path, texts: set[str], timeout: float = 120.0) -> None:
    """Until every one of ``texts`` is in some file of the project (captures are stored
    behind the hook's answer)."""
    deadline = time.monotonic() + timeout
    missing = set(texts)
    while missing:
        missing = {text for text in missing if not files_holding(root, text)}
        if missing and time.monotonic() > deadline:
            log = agent_folder(root) / "agent-server.log"
            tail = log.read_text(encoding="utf-8")[-3000:] if log.exists() else "(no log)"
            raise AssertionError(f"never stored: {sorted(missing)}\n{tail}")
        time.sleep(0.5)


def test_no_secret_a_hook_sees_reaches_the_store_the_spool_the_logs_or_the_export(
    project: Path, tmp_path: Path
) -> None:
    value = {path: SECRETS[kind] for path, kind in CARRIED.items()}
    stderr: list[str] = []
    folder = agent_folder(project)
    folder.mkdir(mode=0o700)
    # 1. No server, and another hook's start under way: the failure waits in the spool.
    (folder / STARTING_FILE).write_text("another hook\n", encoding="utf-8")
    error = f"401 Unauthorized: key {value['spooled claude failure']} was revoked"
    assert hook("claude", failed(project, DEPLOY, error, "s1"), stderr) == ""
    spooled = (folder / SPOOL_FILE).read_bytes()
    assert b"[REDACTED:stripe_key]" in spooled
    assert value["spooled claude failure"].encode() not in spooled
    # 2. Codex's failure (in PostToolUse) starts the server, which takes the spool.
    (folder / STARTING_FILE).unlink()
    codex = payload(
        "PostToolUse",
        project,
        "s1",
        tool_name="shell",
        tool_input={"command": ["bash", "-lc", "git push origin main"]},
        tool_response={
            "exit_code": 128,
            "stdout": "",
            "stderr": f"remote: token {value['spooled codex failure']} lacks write access",
        },
    )
    assert hook("codex", codex, stderr) == ""
    wait_for_note(project)
    wait_until_stored(project, {"[REDACTED:stripe_key]", "[REDACTED:gitlab_token]"})
    assert not (folder / SPOOL_FILE).exists()
    # 3. With the server up, over HTTP: an edit, then the failed command succeeds (a fix
    # whose steps quote the edit), a command that holds a token, a prompt, the turn's end.
    edit = payload(
        "PostToolUse",
        project,
        "s2",
        tool_name="Edit",
        tool_input={
            "file_path": "deploy.env",
            "old_string": "OPENAI_API_KEY=",
            "new_string": f"OPENAI_API_KEY={value['edit']}",
        },
        tool_response={"filePath": "deploy.env"},
    )
    events = [
        ("claude", edit),
        (
            "claude",
            ran(project, DEPLOY, f"{CONTROL} deployed as {value['command output']}", "s2"),
        ),
        (
            "claude",
            ran(
                project,
                f"GITHUB_TOKEN={value['command']} gh release list",
                "v1.4.0  Latest",
                "s2",
            ),
        ),
        ("claude", prompt(project, f"why does {value['prompt']} fail to deploy?", "s2")),
        (
            "claude",
            payload(
                "Stop",
                project,
                "s2",
                stop_hook_active=False,
                last_assistant_message=f"Deployed; the bot posts with {value['stop']}.",
            ),
        ),
        ("claude", payload("SessionEnd", project, "s2", reason="other")),
    ]
    for client, data in events:
        hook(client, data, stderr)  # an answer too slow for the hook's 0.8 s is stored all the same
    wait_until_stored(project, {f"[REDACTED:{kind}]" for kind in STORED} | {"Fix for a failure"})
    stop_servers(project)  # its log is complete once it has exited

    export = tmp_path / "export.jsonl"
    subprocess.run(
        [sys.executable, "-m", "ralph_context", "export", str(export)],
        cwd=project,
        check=True,
        capture_output=True,
        timeout=300,
    )
    exported = export.read_text(encoding="utf-8")
    hook_stderr = "".join(stderr)
    server_log = (folder / "agent-server.log").read_text(encoding="utf-8")
    assert "[debug" in server_log or "[info" in server_log, "the server's log was read"
    # The search below sees the store's text and the export's: a word stored beside a secret.
    assert files_holding(folder / "context", CONTROL) and CONTROL in exported
    for kind in STORED:
        assert f"[REDACTED:{kind}]" in exported, kind
    for path, secret in value.items():
        assert not files_holding(tmp_path, secret), path  # store, spool, logs, trace, export
        assert secret not in hook_stderr, path
