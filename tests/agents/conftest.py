"""Projects whose agents' shared server the tests start (through a hook or ``serve
--shared``): each is a git repository in a temp folder, and whatever server started for it
is stopped when the test ends (its PID is in the project's note or start marker)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralph_context.server.agents.project import (
    STARTING_FILE,
    agent_folder,
    read_server,
)

# A server a test forgets exits by itself after this (RALPH_CONTEXT_AGENTS__IDLE_EXIT_MINUTES).
IDLE_EXIT_MINUTES = "3"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    yield root
    stop_servers(root)


def agent_env(**extra: str) -> dict[str, str]:
    """The environment of a hook the tests run: the servers it starts exit when idle."""
    return {**os.environ, "RALPH_CONTEXT_AGENTS__IDLE_EXIT_MINUTES": IDLE_EXIT_MINUTES, **extra}


def wait_for_note(root: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while read_server(root) is None:
        if time.monotonic() > deadline:
            log = agent_folder(root) / "agent-server.log"
            text = log.read_text(encoding="utf-8") if log.exists() else "(no log)"
            raise AssertionError(f"no agent server came up for {root}:\n{text[-3000:]}")
        time.sleep(0.2)


def stop_servers(root: Path) -> None:
    pids: set[int] = set()
    note = read_server(root)
    if note is not None:
        pids.add(note.pid)
    with contextlib.suppress(OSError, ValueError):
        pids.add(int((agent_folder(root) / STARTING_FILE).read_text(encoding="utf-8")))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for pid in pids:
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child of this process that exited stays a zombie until reaped; it is gone.
    with contextlib.suppress(ChildProcessError):
        done, _status = os.waitpid(pid, os.WNOHANG)
        return done == 0
    return True


@pytest.fixture
def anyio_backend() -> str:
    """The server runs on asyncio; the engine is tested on both backends elsewhere."""
    return "asyncio"
