"""The hook's stdin payload for each of Ralph v2's twelve phase-events, and the workspace
files the hook reads (fixtures written from Ralph's serde structs and file formats)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ralph_context.integrations.ralph_v2.hook import LoopState, _task_changes
from ralph_context.integrations.ralph_v2.payload import EVENTS, PayloadRefused, read_payload
from ralph_context.integrations.ralph_v2.workspace import Workspace


def payload(phase: str, event: str, **changes: Any) -> dict[str, Any]:
    """A payload as Ralph serialises it (``hooks/engine.rs``), fields in its order."""
    data: dict[str, Any] = {
        "schema_version": 1,
        "phase": phase,
        "event": event,
        "phase_event": f"{phase}.{event}",
        "timestamp": "2026-02-28T21:47:00.123456789Z",
        "loop": {
            "id": "primary-20260228-214700",
            "is_primary": True,
            "workspace": "/repo",
            "repo_root": "/repo",
            "pid": 12345,
        },
        "iteration": {"current": 7, "max": 100},
        "context": {
            "active_hat": "ralph",
            "selected_hat": None,
            "selected_task": None,
            "termination_reason": None,
            "human_interact": None,
        },
        "metadata": {"accumulated": {}},
    }
    data.update(changes)
    return data


@pytest.mark.parametrize("phase", ["pre", "post"])
@pytest.mark.parametrize("event", EVENTS)
def test_every_phase_event_is_read(phase: str, event: str) -> None:
    raw = json.dumps(payload(phase, event), separators=(",", ":"))  # no trailing newline
    read = read_payload(raw)
    assert (read.phase_event, read.iteration.current, read.loop.workspace) == (
        f"{phase}.{event}",
        7,
        "/repo",
    )


def test_fields_a_later_ralph_adds_are_ignored_and_termination_is_read() -> None:
    data = payload("post", "loop.error", future_field={"x": 1})
    data["context"]["termination_reason"] = "max_iterations"
    data["loop"]["new_key"] = True
    assert read_payload(json.dumps(data).encode()).context.termination_reason == "max_iterations"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not an object"),
        (json.dumps(payload("post", "iteration.start", schema_version=2)), "schema_version 2"),
        (json.dumps(payload("post", "iteration.end")), "'post.iteration.end' is not one"),
        (
            json.dumps(payload("pre", "loop.start", phase_event="post.loop.start")),
            "is not one",
        ),
        (json.dumps(payload("post", "loop.start", iteration={"current": -1})), "iteration"),
        (json.dumps({**payload("post", "loop.start"), "loop": None}), "loop"),
    ],
)
def test_what_this_version_cannot_read_is_refused_with_the_reason(raw: str, reason: str) -> None:
    with pytest.raises(PayloadRefused, match=reason):
        read_payload(raw)


def _task(
    id: str,
    status: str,
    priority: int = 3,
    blocked: tuple[str, ...] = (),
    loop: str | None = "loop-a",
    title: str | None = None,
) -> str:
    entry: dict[str, Any] = {
        "id": id,
        "title": title or f"Title of {id}",
        "status": status,
        "priority": priority,
        "blocked_by": list(blocked),
        "created": "2026-02-28T21:47:00.123456789+00:00",
    }
    if loop is not None:
        entry["loop_id"] = loop
    return json.dumps(entry)


def test_ready_tasks_are_this_loops_open_unblocked_ones_by_priority(tmp_path: Path) -> None:
    agent = tmp_path / ".ralph" / "agent"
    agent.mkdir(parents=True)
    lines = [
        _task("task-1-aaaa", "closed"),
        _task("task-2-bbbb", "open", 2, ("task-1-aaaa",), title="Wire the hook"),
        _task("task-3-cccc", "open", 1, ("task-2-bbbb",)),  # blocked by an open task
        _task("task-4-dddd", "open", 1, title="Fix the parser"),
        _task("task-5-eeee", "open", 1, loop=None),  # no loop id: invisible in a loop
        _task("task-6-ffff", "open", 1, ("task-missing",)),  # a blocker that does not exist
        "",
        "{not json",
        _task("task-7-aaaa", "in_progress", 1),
    ]
    (agent / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / ".ralph" / "current-loop-id").write_text("loop-a", encoding="utf-8")
    space = Workspace(tmp_path)
    assert [t.id for t in space.ready_tasks()] == ["task-4-dddd", "task-2-bbbb"]
    (tmp_path / ".ralph" / "current-loop-id").unlink()
    assert "task-5-eeee" in [t.id for t in space.ready_tasks()]


def test_events_are_read_once_and_a_half_written_line_waits(tmp_path: Path) -> None:
    events = tmp_path / ".ralph" / "events-20260228.jsonl"
    events.parent.mkdir(parents=True)
    (tmp_path / ".ralph" / "current-events").write_text(
        ".ralph/events-20260228.jsonl", encoding="utf-8"
    )
    events.write_text(
        '{"topic":"build.done","payload":"tests pass","ts":"2026-02-28T21:48:00Z"}\n'
        '{"ts":"t","iteration":3,"hat":"builder","topic":"build.blocked","payload":{"why":"x"}}\n'
        '{"topic":"half',
        encoding="utf-8",
    )
    space = Workspace(tmp_path)
    found, offset = space.events_since(0)
    assert [(e.topic, e.payload, e.iteration) for e in found] == [
        ("build.done", "tests pass", 0),
        ("build.blocked", '{"why": "x"}', 3),
    ]
    assert space.events_since(offset) == ([], offset)
    with events.open("a", encoding="utf-8") as out:
        out.write('-done","payload":""}\n')
    later, _ = space.events_since(offset)
    assert [e.topic for e in later] == ["half-done"]
    assert Workspace(tmp_path / "nowhere").events_since(5) == ([], 5)


def test_the_query_puts_ready_tasks_then_the_scratchpad_then_the_objective(
    tmp_path: Path,
) -> None:
    agent = tmp_path / ".ralph" / "agent"
    agent.mkdir(parents=True)
    (tmp_path / "PROMPT.md").write_text("# Objective\nBuild a CLI for invoices.\n")
    (agent / "scratchpad.md").write_text("## Notes\n- tried pytest -x, one failure in io\n")
    (agent / "tasks.jsonl").write_text(_task("task-1-aaaa", "open", loop=None) + "\n")
    query = Workspace(tmp_path).query()
    assert query.index("Title of task-1-aaaa") < query.index("pytest") < query.index("invoices")
    assert Workspace(tmp_path / "empty").query() == ""


def test_task_changes_name_what_happened_since_the_last_record(tmp_path: Path) -> None:
    agent = tmp_path / ".ralph" / "agent"
    agent.mkdir(parents=True)
    lines = [
        _task("task-1-aaaa", "open", title="New task"),
        _task("task-2-bbbb", "in_progress", title="Begun"),
        _task("task-3-cccc", "closed", title="Done"),
        _task("task-4-dddd", "failed", title="Broke"),
        _task("task-5-eeee", "open", title="Back from closed"),
        _task("task-6-ffff", "open", title="Put back unstarted"),
        _task("task-7-aaaa", "open", title="Unchanged"),
    ]
    (agent / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = {
        "task-2-bbbb": "open",
        "task-3-cccc": "in_progress",
        "task-4-dddd": "in_progress",
        "task-5-eeee": "closed",
        "task-6-ffff": "in_progress",
        "task-7-aaaa": "open",
    }
    changes, now = _task_changes(Workspace(tmp_path), LoopState(tasks=before))
    assert changes == [
        ("added", "New task"),
        ("started", "Begun"),
        ("closed", "Done"),
        ("failed", "Broke"),
        ("reopened", "Back from closed"),
        ("reopened", "Put back unstarted"),
    ]
    assert now["task-6-ffff"] == "open" and len(now) == 7
