"""What a Ralph v2 loop's workspace says about the work now: the objective, the ready tasks,
the scratchpad's tail and the events since the last look.

The hook's payload carries no prompt and no objective (Ralph builds the prompt after the
hook), so the query for the next iteration is built from these files, read the way Ralph
reads them (``crates/ralph-core``: ``task_store.rs``, ``task.rs``, ``event_logger.rs``,
``hatless_ralph.rs``). Every reader tolerates a missing or half-written file: the loop's
agent writes them while we read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Event", "Task", "Workspace"]

# Ralph keeps the scratchpad's last 16,000 bytes in the prompt; the query needs far less.
_SCRATCHPAD_TAIL = 2_000
_OBJECTIVE_CHARS = 2_000


@dataclass(frozen=True)
class Task:
    """A ``tasks.jsonl`` entry, as far as the query needs it."""

    id: str
    title: str
    status: str
    priority: int
    blocked_by: tuple[str, ...]
    loop_id: str | None


@dataclass(frozen=True)
class Event:
    """An events-file record: ``{"topic", "payload", "ts"}`` (agents) or Ralph's richer one."""

    topic: str
    payload: str
    iteration: int


@dataclass(frozen=True)
class Workspace:
    """A loop workspace (``loop.workspace`` in the payload)."""

    root: Path

    @property
    def agent(self) -> Path:
        return self.root / ".ralph" / "agent"

    @property
    def memories(self) -> Path:
        return self.agent / "memories.md"

    def objective(self) -> str:
        """The loop's objective: ``PROMPT.md`` (Ralph reads it once at the start)."""
        return _read(self.root / "PROMPT.md")[:_OBJECTIVE_CHARS].strip()

    def loop_id(self) -> str | None:
        """``.ralph/current-loop-id``: while it exists, only that loop's tasks count."""
        text = _read(self.root / ".ralph" / "current-loop-id").strip()
        return text or None

    def tasks(self) -> list[Task]:
        """Every well-formed task line (blank and malformed lines skipped, as Ralph does)."""
        found = []
        for line in _read(self.agent / "tasks.jsonl").splitlines():
            entry = _object(line)
            if entry is None or not isinstance(entry.get("id"), str):
                continue
            blocked = entry.get("blocked_by") or []
            found.append(
                Task(
                    id=entry["id"],
                    title=str(entry.get("title", "")),
                    status=str(entry.get("status", "open")),
                    priority=_int(entry.get("priority"), 3),
                    blocked_by=tuple(str(b) for b in blocked if isinstance(b, str)),
                    loop_id=entry.get("loop_id") if isinstance(entry.get("loop_id"), str) else None,
                )
            )
        return found

    def ready_tasks(self) -> list[Task]:
        """Open tasks whose blockers are all closed, this loop's only, by priority
        (``task.rs:111-121``, scoped as ``EL:1696-1703``)."""
        loop = self.loop_id()
        tasks = [t for t in self.tasks() if loop is None or t.loop_id == loop]
        closed = {t.id for t in self.tasks() if t.status == "closed"}
        ready = [t for t in tasks if t.status == "open" and set(t.blocked_by) <= closed]
        return sorted(ready, key=lambda t: (t.priority, t.id))

    def scratchpad_tail(self, size: int = _SCRATCHPAD_TAIL) -> str:
        data = _read_bytes(self.agent / "scratchpad.md")
        return data[-size:].decode("utf-8", errors="ignore").strip()

    def latest_notes(self) -> list[str]:
        """The scratchpad's newest entry: the lines under its last heading (agents journal
        one per iteration), or its last three lines. Older entries stay out of the query:
        what the loop did three iterations ago is not what it does next."""
        lines = [line for line in self.scratchpad_tail(1_500).splitlines() if line.strip()]
        headings = [i for i, line in enumerate(lines) if line.lstrip().startswith("#")]
        if headings and headings[-1] < len(lines) - 1:
            return lines[headings[-1] :][-8:]
        return lines[-3:]

    def events_file(self) -> Path | None:
        """The events JSONL named in ``.ralph/current-events`` (relative to the workspace
        unless absolute)."""
        named = _read(self.root / ".ralph" / "current-events").strip()
        if not named:
            return None
        path = Path(named)
        return path if path.is_absolute() else self.root / path

    def events_since(self, offset: int) -> tuple[list[Event], int]:
        """Complete event lines after byte ``offset``, and the offset after the last one
        (a line still being written is left for next time)."""
        path = self.events_file()
        if path is None:
            return [], offset
        data = _read_bytes(path)
        if len(data) < offset:  # a new events file (a new loop): from its start
            offset = 0
        end = data.rfind(b"\n") + 1
        if end <= offset:
            return [], offset
        found = []
        for line in data[offset:end].decode("utf-8", errors="replace").splitlines():
            entry = _object(line)
            if entry is None or not isinstance(entry.get("topic"), str):
                continue
            payload = entry.get("payload", "")
            found.append(
                Event(
                    topic=entry["topic"],
                    payload=payload if isinstance(payload, str) else json.dumps(payload),
                    iteration=_int(entry.get("iteration"), 0),
                )
            )
        return found, end

    def query(self, limit: int = 500) -> str:
        """What the next iteration is about, most specific first: the ready tasks, the
        scratchpad's last lines, then the objective (the engine reads 500 characters)."""
        parts = [t.title for t in self.ready_tasks()[:3]]
        parts.append(" ".join(line.strip("#-* ") for line in self.latest_notes()))
        parts.append(self.objective())
        return " \n".join(p for p in parts if p)[:limit]


def _read(path: Path) -> str:
    return _read_bytes(path).decode("utf-8", errors="replace")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return b""


def _object(line: str) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
