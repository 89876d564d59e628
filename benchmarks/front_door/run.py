"""The front door's figures (issue 63): what a person meets first, each a real process.

- ``first_hook``: a fresh git project with one note stored by ``ralph-context store`` and no
  server; its first ``UserPromptSubmit`` hook (``hook claude``): seconds to its answer,
  whether the note was in it, and seconds until the server it started answers
  (``agents.cold`` answers meanwhile from the store read-only; the default bound, 4 s, is
  lifted here so the answer's cost shows at any load).
- ``sigint_stdio`` / ``sigint_http``: ``serve`` ready, one SIGINT: seconds to its exit, and
  its exit code (``server.interrupt``).
- ``stats``: ``ralph-context stats`` with no server (the model not loaded: ``embeddings.lazy``).

The machine's load average is written beside each run: on a shared 2-core machine it moves
every figure.

    python -m benchmarks.front_door.run [--repeats 3]   # prints, writes results/results.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.serving import free_port
from ralph_context.integrations.agents.hook import COLD_ENV
from ralph_context.server.agents.project import read_server

__all__ = ["first_hook", "main", "sigint", "stats"]

CLI = [sys.executable, "-m", "ralph_context"]
NOTE = "The flaky login test waits on the redis lock; run it with REDIS_URL set to the container"
PROMPT = "why does the login test flake on the redis lock?"
_WAIT = 300.0


def _project(folder: Path) -> tuple[Path, dict[str, str]]:
    """A git project holding ``NOTE`` in its store, and the environment to reach it."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    config = folder / "ralph.yaml"
    config.write_text("learning:\n  mcp_context:\n    storage:\n      path: .agent/context\n")
    env = {**os.environ, "RALPH_CONTEXT_CONFIG": str(config)}
    env.pop("RALPH_CONTEXT_TOKEN", None)
    env["RALPH_CONTEXT_AGENTS__IDLE_EXIT_MINUTES"] = "2"
    subprocess.run(
        [*CLI, "store", NOTE, "--type", "skill"],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
    )
    return folder, env


def first_hook(folder: Path) -> dict[str, Any]:
    """The first prompt's hook of a fresh project with a note (see the module docstring)."""
    root, env = _project(folder)
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": PROMPT, "session_id": "s"}
    payload["cwd"] = str(root)
    started = time.perf_counter()
    done = subprocess.run(
        [*CLI, "hook", "claude"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=root,
        env={**env, COLD_ENV: str(_WAIT)},
        timeout=_WAIT + 60,
    )
    hook_s = time.perf_counter() - started
    while read_server(root) is None and time.perf_counter() - started < _WAIT:
        time.sleep(0.1)
    server_s = time.perf_counter() - started
    note = read_server(root)
    if note is not None:
        os.kill(note.pid, signal.SIGTERM)
    return {
        "hook_s": round(hook_s, 2),
        "pushed": NOTE in done.stdout.decode(),
        "server_s": round(server_s, 1),
    }


def sigint(folder: Path, transport: str) -> dict[str, Any]:
    """Seconds from one SIGINT to ``serve``'s exit, once it said it is ready."""
    folder.mkdir(parents=True)
    (folder / "ralph.yaml").write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
    )
    env = {**os.environ, "RALPH_CONTEXT_CONFIG": str(folder / "ralph.yaml")}
    args = ["--transport", "http", "--port", str(free_port())] if transport == "http" else []
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [*CLI, "serve", *args],
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    ready = b"console http" if transport == "http" else b"waiting for an MCP client"
    deadline = time.monotonic() + _WAIT
    while ready not in (said := os.pread(log.fileno(), 1 << 20, 0)):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"serve ({transport}) did not get ready:\n{said.decode()[-2000:]}")
        time.sleep(0.05)
    started = time.perf_counter()
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=60)
    stopped = time.perf_counter() - started
    assert process.stdin is not None
    process.stdin.close()
    log.close()
    return {"exit_s": round(stopped, 2), "code": code}


def stats(folder: Path) -> dict[str, Any]:
    """Seconds of ``ralph-context stats`` on a store of one note, with no server."""
    root, env = _project(folder)
    started = time.perf_counter()
    subprocess.run([*CLI, "stats", "--json"], cwd=root, env=env, capture_output=True, check=True)
    return {"wall_s": round(time.perf_counter() - started, 2)}


def main(argv: list[str] | None = None) -> None:
    """Run each measurement ``--repeats`` times; print them, write ``results.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    options = parser.parse_args(argv)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="front-door-") as scratch:
        for n in range(options.repeats):
            here = Path(scratch) / str(n)
            run: dict[str, Any] = {"load": round(os.getloadavg()[0], 1)}
            run["first_hook"] = first_hook(here / "hook")
            run["sigint_stdio"] = sigint(here / "stdio", "stdio")
            run["sigint_http"] = sigint(here / "http", "http")
            run["stats"] = stats(here / "stats")
            print(json.dumps(run), flush=True)
            runs.append(run)
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "results.json").write_text(json.dumps({"runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
