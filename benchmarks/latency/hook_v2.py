"""Wall time of one ``ralph-context hook`` call as Ralph v2 makes it: a new process per call,
the payload on stdin, cwd the loop workspace. Two ways: the hook opens the store itself
(it loads the model every call), or a ralph-context HTTP server owns the store and the hook
is its client.

Each call is a ``post.iteration.start``: it records the previous iteration, syncs the
agent's memories and writes the best items into ``memories.md``, as in a loop.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.latency.mcp_latency import embeddings_yaml
from benchmarks.latency.run import percentile

__all__ = ["hook_v2_latency"]

_HOOK = [sys.executable, "-m", "ralph_context", "hook"]


def _payload(workspace: Path, iteration: int) -> str:
    return json.dumps(
        {
            "schema_version": 1,
            "phase": "post",
            "event": "iteration.start",
            "phase_event": "post.iteration.start",
            "timestamp": "2026-11-25T08:00:00Z",
            "loop": {"id": "bench", "is_primary": True, "workspace": str(workspace)},
            "iteration": {"current": iteration, "max": 10_000},
            "context": {"active_hat": "builder"},
            "metadata": {"accumulated": {}},
        }
    )


def _workspace(store: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ralph.yml").write_text(
        "memories:\n  enabled: true\n  inject: auto\n  budget: 2000\n"
        f"learning:\n  mcp_context:\n    storage:\n      path: {store}\n"
        "    lifecycle:\n      auto_run: false\n" + embeddings_yaml(),
        encoding="utf-8",
    )
    (folder / "PROMPT.md").write_text("Answer questions about the conversations.\n")
    (folder / ".ralph" / "agent").mkdir(parents=True, exist_ok=True)
    return folder


def _calls(workspace: Path, questions: list[str], first: int) -> list[float]:
    notes = workspace / ".ralph" / "agent" / "scratchpad.md"
    times = []
    for n, question in enumerate(questions):
        with notes.open("a", encoding="utf-8") as out:
            out.write(f"\n## Iteration {first + n}\n- {question}\n")
        started = time.perf_counter()
        done = subprocess.run(
            _HOOK,
            input=_payload(workspace, first + n),
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0 or "skipped" in done.stderr:
            raise RuntimeError(f"the hook failed: {done.stderr.strip()}")
    return times


def hook_v2_latency(store: Path, work: Path, questions: list[str]) -> dict[str, Any]:
    """p50/p99 wall ms per call, the hook alone and through a server, on ``store`` (the
    iterations it records continue the store's)."""
    from benchmarks.latency.mcp_latency import start_http
    from ralph_context.storage.lance_store import LanceStore

    latest = LanceStore(store, model_id=None, dimension=None, read_only=True).latest_iteration()
    first_iteration = latest + 2  # the first call records latest + 1
    workspace = _workspace(store, work / "hook-v2")
    alone = _calls(workspace, questions, first_iteration)
    server, _ = start_http(workspace / "ralph.yml")
    try:
        served = _calls(workspace, questions, first_iteration + len(questions))
    finally:
        server.terminate()
        server.wait(timeout=60)
    shutil.rmtree(workspace / ".ralph", ignore_errors=True)

    def stats(values: list[float]) -> dict[str, float]:
        return {
            "n": len(values),
            "p50_ms": round(percentile(values, 50), 1),
            "p99_ms": round(percentile(values, 99), 1),
        }

    return {"own_engine": stats(alone), "via_server": stats(served)}
