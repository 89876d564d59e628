"""Wall time of one Claude Code hook call as Claude Code makes it: ``ralph-context hook
claude``, a new process per event, the payload on stdin, Python's start included.

Three ways: the project's server is up (a ``UserPromptSubmit`` per question, each a new
session so nothing is skipped as given before: retrieval and the answer's text in full,
and a ``PostToolUseFailure`` per question: the fixes looked up, the failure stored behind
the answer); no server answers (a stale note, a start already under way: the fail-open
path a hook takes while the server starts); and a server that accepts and never answers
(the hook gives up at its own deadline).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from ralph_context.config import Settings
from ralph_context.server.agents.project import (
    STARTING_FILE,
    ServerNote,
    agent_folder,
    project_root,
    write_server,
)

__all__ = ["HungServer", "agent_hook_latency", "agent_hooks"]

_HOOK = [sys.executable, "-m", "ralph_context", "hook", "claude"]


def _stats(values: list[float]) -> dict[str, float]:
    array = np.asarray(values, dtype=np.float64)
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(array, 50)), 1),
        "p95_ms": round(float(np.percentile(array, 95)), 1),
        "max_ms": round(float(array.max()), 1),
    }


def _call(project: Path, payload: dict[str, Any]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        _HOOK,
        input=json.dumps(payload),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"the hook exited {done.returncode}: {done.stderr.strip()}")
    return elapsed, done.stdout


def _prompt(project: Path, n: int, question: str) -> dict[str, Any]:
    return {
        "session_id": f"bench-{n}",
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": question,
    }


def _failure(project: Path, n: int, question: str) -> dict[str, Any]:
    return {
        "session_id": f"bench-{n}",
        "cwd": str(project),
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": f"python3 answer.py --n {n}"},
        "error": f"Exit code 1\nLookupError: no answer for {question[:200]!r}",
    }


class HungServer:
    """A port that accepts connections and never answers (a server stuck mid-request);
    the tests of the hook's fail-open path use it too."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.server.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.server.close()
        for connection in self.held:
            connection.close()


def agent_hook_latency(
    mcp_url: str, work: Path, questions: list[str], owner_token: Path | None = None
) -> dict[str, Any]:
    """p50/p95 wall ms of hook calls against the server at ``mcp_url`` (its store
    loaded), and of the fail-open paths. ``owner_token``: the store's owner token file,
    which the note names as the server's own note does (the hook reads and sends it)."""
    folder = work / "agent-project"
    folder.mkdir(parents=True, exist_ok=True)
    # Where the hook looks for the server: the folder, or the top of the git repository
    # holding it (the suite's folder is one: ``code_repo``); the agent works in the folder.
    project = project_root(folder)
    base = mcp_url.removesuffix("/mcp")
    token = None if owner_token is None else str(owner_token)
    write_server(project, ServerNote(base, "/mcp", pid=0, owner_token=token))
    prompts, failures, injected = [], [], 0
    for n, question in enumerate(questions):
        elapsed, out = _call(folder, _prompt(folder, n, question))
        prompts.append(elapsed)
        injected += bool(out)
        failures.append(_call(folder, _failure(folder, n, question))[0])
    # No server: a stale note and a start under way (a fresh marker), so nothing starts.
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    write_server(project, ServerNote(f"http://127.0.0.1:{port}", "/mcp", pid=0))
    down = []
    for n, question in enumerate(questions[:20]):
        (agent_folder(project) / STARTING_FILE).write_text("0\n", encoding="utf-8")
        down.append(_call(folder, _prompt(folder, n, question))[0])
    hung = HungServer()
    try:
        address = hung.server.getsockname()
        write_server(project, ServerNote(f"http://127.0.0.1:{address[1]}", "/mcp", pid=0))
        stuck = [_call(folder, _prompt(folder, n, q))[0] for n, q in enumerate(questions[:5])]
    finally:
        hung.close()
    return {
        "prompt": _stats(prompts),
        "prompt_answered_with_context": injected,
        "failure": _stats(failures),
        "server_down": _stats(down),
        "server_hung": _stats(stuck),
    }


def agent_hooks(config: Path, work: Path, questions: list[str]) -> dict[str, Any]:
    """:func:`agent_hook_latency` against an HTTP server started on ``config``'s store."""
    from benchmarks.latency.mcp_latency import start_http

    process, url = start_http(config)
    try:
        owner = Settings.load(config).owner_token_path()
        return agent_hook_latency(url, work, questions, owner)
    finally:
        process.terminate()
        process.wait(timeout=60)
