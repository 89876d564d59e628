"""``init --agent claude`` leaves the repository clean: once its files are committed, the
hooks' calls (a server started, its store, the spool, the logs under ``.agent/``) leave
``git status --porcelain`` empty, through the ``.gitignore`` entry init writes."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from ralph_context.server.agents.project import SPOOL_FILE, agent_folder
from tests.agents.conftest import wait_for_note
from tests.agents.payloads import EXTRA, payload, ran
from tests.agents.test_hook import hook
from tests.cli.test_cli import cli


def git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_hook_calls_after_init_leave_git_status_empty(project: Path) -> None:
    cli("init", "--project", str(project), "--agent", "claude")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "wire ralph-context")
    assert git(project, "status", "--porcelain") == ""

    for data in (
        payload("SessionStart", project, **EXTRA["SessionStart"]),
        ran(project, "pytest -q", "3 passed"),
        payload("UserPromptSubmit", project, **EXTRA["UserPromptSubmit"]),
    ):
        assert hook("claude", json.dumps(data).encode(), project).returncode == 0
    wait_for_note(project)
    for _ in range(120):  # the server takes the spool once it listens
        if not (agent_folder(project) / SPOOL_FILE).exists():
            break
        time.sleep(0.5)
    assert (agent_folder(project) / "context").is_dir()  # the store is there, ignored

    assert git(project, "status", "--porcelain") == ""
