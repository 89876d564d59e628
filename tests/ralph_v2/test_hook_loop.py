"""``ralph-context hook`` run exactly as Ralph v2 runs a hook (argv, no shell, the payload on
stdin without a newline then closed, cwd the loop workspace, killed at its timeout), and a
simulated v2 loop in a git repository: what iteration 1 learned reaches iteration 4's
prompt, an unrelated note does not, and the user's memories stay as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from ralph_context.config import Settings
from ralph_context.integrations.ralph_v2.memories import MANAGED_TAG, injected_block, parse
from ralph_context.integrations.ralph_v2.payload import EVENTS
from ralph_context.storage import writer_lock
from tests.server.mcp_scenario import call
from tests.server_process import environment, owner_client, start_http_server

HOOK = [sys.executable, "-m", "ralph_context", "hook"]
BUDGET = 600
USER_MEMORIES = (
    "# Memories\n\n## Patterns\n\n### mem-1737372000-a1b2\n> Invoices are JSON lines, one per"
    " customer\n<!-- tags: format | created: 2025-01-20 -->\n\n## Decisions\n\n## Fixes\n\n"
    "## Context\n"
)


def payload(workspace: Path, phase_event: str, current: int, **context: Any) -> str:
    phase, event = phase_event.split(".", 1)
    data = {
        "schema_version": 1,
        "phase": phase,
        "event": event,
        "phase_event": phase_event,
        "timestamp": "2026-11-25T08:00:00.123456789Z",
        "loop": {
            "id": "primary-20261125-080000",
            "is_primary": True,
            "workspace": str(workspace),
            "repo_root": str(workspace),
            "pid": os.getpid(),
        },
        "iteration": {"current": current, "max": 10},
        "context": {
            "active_hat": "builder",
            "selected_hat": "builder",
            "selected_task": None,
            "termination_reason": None,
            "human_interact": None,
            **context,
        },
        "metadata": {"accumulated": {}},
    }
    return json.dumps(data, separators=(",", ":"))  # Ralph writes no trailing newline


def run_hook(
    workspace: Path, stdin: str, timeout: float = 120, command: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """As ``hooks/executor.rs`` does: argv, cwd the workspace, stdin written then closed,
    killed at the timeout."""
    return subprocess.run(
        command or HOOK,
        input=stdin,
        cwd=workspace,
        env=environment(workspace / "ralph.yml"),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "PROMPT.md").write_text("# Objective\nBuild a CLI that imports invoices from CSV.\n")
    (root / "ralph.yml").write_text(
        "cli:\n  backend: claude\nmemories:\n  enabled: true\n  inject: auto\n"
        f"  budget: {BUDGET}\nlearning:\n  mcp_context:\n    storage:\n"
        "      path: .ralph/context-store\n",
        encoding="utf-8",
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    setup = subprocess.run(
        [*HOOK[:3], "init", "--ralph", "v2", "--project", str(root)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert setup.returncode == 0, setup.stderr
    agent = root / ".ralph" / "agent"
    agent.mkdir(parents=True)
    (agent / "memories.md").write_text(USER_MEMORIES, encoding="utf-8")
    (root / ".ralph" / "current-events").write_text(".ralph/events-1.jsonl")
    (root / ".ralph" / "current-loop-id").write_text("primary-20261125-080000")
    return root


@pytest.mark.parametrize("phase", ["pre", "post"])
@pytest.mark.parametrize(
    "event", [e for e in EVENTS if e not in ("iteration.start", "loop.complete", "loop.error")]
)
def test_events_with_nothing_to_do_exit_0_at_once(workspace: Path, phase: str, event: str) -> None:
    done = run_hook(workspace, payload(workspace, f"{phase}.{event}", 3), timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    assert not (workspace / ".ralph" / "context-store").exists()


@pytest.mark.parametrize(
    "stdin",
    ["", "{not json", json.dumps({"schema_version": 2, "event": "iteration.start"})],
)
def test_what_it_cannot_read_is_logged_and_the_loop_goes_on(workspace: Path, stdin: str) -> None:
    done = run_hook(workspace, stdin, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith("ralph-context hook: ignored:")
    assert len(done.stderr.splitlines()) == 1


def _agent_iteration(root: Path, n: int, note: str, topic: str, payload: str) -> None:
    """What a scripted agent leaves behind: a scratchpad note and an event."""
    with (root / ".ralph" / "agent" / "scratchpad.md").open("a", encoding="utf-8") as out:
        out.write(f"\n## Iteration {n}\n- {note}\n")
    with (root / ".ralph" / "events-1.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps({"topic": topic, "payload": payload, "ts": "t"}) + "\n")


def _ralph_memory_add(root: Path, block: str) -> None:
    """``ralph tools memory add -t fix``: the block right after the section header."""
    path = root / ".ralph" / "agent" / "memories.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("## Fixes\n", "## Fixes\n" + block, 1), encoding="utf-8")


def test_a_simulated_loop_carries_a_lesson_forward_and_keeps_the_users_memories(
    workspace: Path,
) -> None:
    config = yaml.safe_load((workspace / "ralph.yml").read_text(encoding="utf-8"))
    (spec,) = config["hooks"]["events"]["post.iteration.start"]  # what init wrote

    def start(n: int) -> str:
        stdin = payload(workspace, "post.iteration.start", n)
        done = run_hook(workspace, stdin, spec["timeout_seconds"], spec["command"])
        assert (done.returncode, done.stdout) == (0, ""), done.stderr
        return done.stderr

    start(1)
    _agent_iteration(
        workspace,
        1,
        "Invoice CSV files from the bank start with a UTF-16 byte order mark; strip the BOM "
        "before parsing or the first column name is wrong",
        "build.failed",
        "csv header mismatch: '\\ufeffinvoice_id'",
    )
    start(2)
    _agent_iteration(
        workspace,
        2,
        "The office lunch order this Friday is pizza from Luigi's",
        "build.done",
        "README updated",
    )
    fix = (
        "\n### mem-1795000000-0b1c\n> Run the importer with --strict in CI\n"
        "<!-- tags: ci | created: 2026-11-25 -->\n"
    )
    _ralph_memory_add(workspace, fix)
    report = start(3)
    assert "recorded 2, synced 1" in report, report
    tasks = workspace / ".ralph" / "agent" / "tasks.jsonl"
    tasks.write_text(
        json.dumps(
            {
                "id": "task-1795000100-aaaa",
                "title": "Import the bank's invoice CSV export",
                "status": "open",
                "priority": 1,
                "blocked_by": [],
                "loop_id": "primary-20261125-080000",
                "created": "2026-11-25T08:00:00+00:00",
            }
        )
        + "\n"
    )
    _agent_iteration(workspace, 3, "Started on the importer", "build.started", "importer")
    # The agent deleted its memory (Ralph's delete rewrites the file without it).
    path = workspace / ".ralph" / "agent" / "memories.md"
    path.write_text(path.read_text(encoding="utf-8").replace(fix, "\n"), encoding="utf-8")
    report = start(4)
    assert "recorded 3" in report and "forgot 1" in report, report

    text = path.read_text(encoding="utf-8")
    block = injected_block(parse(text), BUDGET)  # what Ralph puts in iteration 4's prompt
    assert "truncated" not in block
    assert "UTF-16 byte order mark" in block, block
    assert "lunch" not in block
    assert "Started on the importer" not in block  # iteration 3: still in the scratchpad
    ours = [m for m in parse(text) if MANAGED_TAG in m.tags]
    assert ours and all(m.memory_type == "context" for m in ours)
    user = parse(USER_MEMORIES)[0]
    assert user in parse(text)
    assert text.startswith(USER_MEMORIES.split("## Decisions")[0])

    done = run_hook(
        workspace, payload(workspace, "post.loop.complete", 4, termination_reason="completed")
    )
    assert done.returncode == 0 and "recorded 4" in done.stderr, done.stderr
    history = subprocess.run(
        [
            sys.executable,
            "-m",
            "ralph_context",
            "search",
            "Run the importer with --strict",
            "--json",
            "--min-score",
            "0",
        ],
        cwd=workspace,
        env=environment(workspace / "ralph.yml"),
        capture_output=True,
        text=True,
        check=True,
    )
    contents = [hit["item"]["content"] for hit in json.loads(history.stdout)["items"]]
    assert "Run the importer with --strict in CI" not in contents  # forgotten with Ralph


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_with_a_server_owning_the_store_the_hook_is_its_client(workspace: Path) -> None:
    process, url = start_http_server(workspace / "ralph.yml")
    try:
        start = payload(workspace, "post.iteration.start", 1)
        assert run_hook(workspace, start).returncode == 0
        _agent_iteration(
            workspace,
            1,
            "The staging database password rotates every Monday at 09:00",
            "deploy.failed",
            "auth error on staging db",
        )
        done = run_hook(workspace, payload(workspace, "post.iteration.start", 2))
        assert done.returncode == 0 and "recorded 1" in done.stderr, done.stderr
        async with owner_client(url, workspace / "ralph.yml") as client:  # its own store
            answer = await call(
                client, "get_relevant_context", query="staging database password rotation"
            )
        (summary,) = [
            e["item"] for e in answer["items"] if "rotates every Monday" in e["item"]["content"]
        ]
        # Stored through the server in the loop's thread, at the iteration it summarizes.
        assert (summary["source"], summary["created_iteration"]) == (
            "ralph:primary-20261125-080000",
            1,
        )
        # The iteration a call just recorded is left out of its block (the scratchpad
        # still shows it); the next iteration's block carries it, read through the server.
        _agent_iteration(
            workspace, 2, "CI cannot log in to the staging database", "ci.failed", "auth"
        )
        later = run_hook(workspace, payload(workspace, "post.iteration.start", 3))
        assert later.returncode == 0 and "recorded 2" in later.stderr, later.stderr
        text = (workspace / ".ralph" / "agent" / "memories.md").read_text(encoding="utf-8")
        assert "rotates every Monday" in text, later.stderr
    finally:
        process.stop()


@pytest.mark.parametrize(
    ("phase_event", "reason"),
    [
        ("pre.iteration.start", None),
        ("pre.loop.complete", "completed"),
        ("pre.loop.error", "max_iterations"),
        ("post.loop.error", "consecutive_failures"),
    ],
)
def test_the_other_events_with_work_record_and_exit_0(
    workspace: Path, phase_event: str, reason: str | None
) -> None:
    _agent_iteration(workspace, 2, "Tried the importer on a sample", "build.done", "ok")
    stdin = payload(workspace, phase_event, 3, termination_reason=reason)
    done = run_hook(workspace, stdin)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    recorded = 2 if phase_event.endswith("iteration.start") else 3
    assert f"recorded {recorded}" in done.stderr, done.stderr


def test_past_its_deadline_the_hook_gives_up_and_exits_0(workspace: Path) -> None:
    """A memories.md of 3,000 of the user's memories to sync (each embedded and stored:
    seconds of work on top of loading the model) does not fit a 1 s deadline, which ends
    the call first. (Opening the store alone once took seconds; on a warm machine it can
    fit in one, and this test then failed.)"""
    blocks = "".join(
        f"\n### mem-17950{n:05d}-0b1c\n> Step {n} of the importer needs --strict in CI\n"
        "<!-- tags: ci | created: 2026-11-25 -->\n"
        for n in range(3_000)
    )
    _ralph_memory_add(workspace, blocks)
    command = [*HOOK, "--deadline", "1"]
    done = run_hook(
        workspace, payload(workspace, "post.iteration.start", 2), timeout=30, command=command
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith("ralph-context hook: skipped (TimeoutError"), done.stderr


def test_beside_a_writer_without_an_endpoint_it_still_injects_and_stores_later(
    workspace: Path,
) -> None:
    """The agent's own stdio server holds the store (another loop's, say): the hook reads
    beside it and stores nothing, and the next call stores what this one could not."""
    first = run_hook(workspace, payload(workspace, "post.iteration.start", 1))
    assert first.returncode == 0, first.stderr
    _agent_iteration(
        workspace, 1, "Invoice totals are rounded half-even", "build.done", "rounding fixed"
    )
    settings = Settings.load(workspace / "ralph.yml")
    holder = subprocess.Popen(
        [*HOOK[:3], "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=workspace,
        env=environment(workspace / "ralph.yml"),
    )
    try:
        deadline = time.monotonic() + 60
        while writer_lock.other_writer(settings.store_root()) is None:
            assert holder.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        beside = run_hook(workspace, payload(workspace, "post.iteration.start", 2))
        assert beside.returncode == 0 and "nothing stored" in beside.stderr, beside.stderr
    finally:
        holder.terminate()
        holder.communicate(timeout=30)
    after = run_hook(workspace, payload(workspace, "post.iteration.start", 3))
    assert "recorded 2" in after.stderr, after.stderr  # iteration 1 went in with 2's call
    # Left out of the block of the call that recorded it; the next call injects it.
    _agent_iteration(workspace, 3, "Totals match the ledger", "check.done", "ok")
    fourth = run_hook(workspace, payload(workspace, "post.iteration.start", 4))
    assert "recorded 3" in fourth.stderr, fourth.stderr
    text = (workspace / ".ralph" / "agent" / "memories.md").read_text(encoding="utf-8")
    assert "rounded half-even" in text
