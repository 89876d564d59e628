"""What ``ralph-context hook`` does at each Ralph v2 boundary.

``post.iteration.start`` for iteration N (it always fires, after hat selection and before
Ralph builds the prompt):

1. record iteration N-1, which has no event of its own: the events the loop wrote since
   the last call, the scratchpad's new lines, the tasks closed meanwhile and the files git
   sees changed;
2. bring the agent's own memories (``ralph tools memory add``) into the store, one item
   each under a key made of its id and text, and forget those Ralph no longer has;
3. search for what the next iteration is about (``workspace.query``) and write the best
   items that pass the loop's push gate (``retrieval.loop_push_gate``; none for the
   default model) into ``memories.md`` as our managed entries, within ``memories.budget``,
   checked against the workspace's code first (``codebase``: an item about files deleted
   since is not written, one about files changed since is marked and placed last).

``post.loop.complete`` and ``post.loop.error`` record the last iteration with the reason
the loop ended. Other events need nothing. What the hook has seen (events read, tasks,
memories synced) is kept in ``.ralph/ralph-context/state.json`` in the workspace.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

import anyio
import yaml

from ralph_context._logging import get_logger
from ralph_context.atomic import write_text_atomically
from ralph_context.codebase import Repository, for_push
from ralph_context.config.retrieval import PushGate
from ralph_context.errors import IdempotencyConflict, ItemForgotten
from ralph_context.integrations.ralph_v2 import memories
from ralph_context.integrations.ralph_v2.client import Memory, ReadOnly
from ralph_context.integrations.ralph_v2.payload import WORK_EVENTS, HookPayload
from ralph_context.integrations.ralph_v2.workspace import Event, Workspace
from ralph_context.models import ContextType, IterationResult, RetrievedItem
from ralph_context.rendering import Note, memory_entry
from ralph_context.retrieval.gate import pushed
from ralph_context.validation import MAX_SOURCE_CHARS

__all__ = ["MEMORY_TAG", "LoopState", "Report", "handle", "loop_thread"]

log = get_logger("ralph_context.ralph_v2")

STATE_FILE = Path(".ralph") / "ralph-context" / "state.json"
MEMORY_TAG = "ralph-memory"  # items that came from the agent's own memories
_KINDS = {
    "pattern": ContextType.SKILL,
    "decision": ContextType.SKILL,
    "fix": ContextType.SKILL,
    "context": ContextType.OUTPUT,
}
_FAILED = ("fail", "error", "blocked")
_ENTRY_CHARS = 600
_SUMMARY_CHARS = 4_000


@dataclass
class LoopState:
    """What earlier calls for this loop saw."""

    loop_id: str = ""
    recorded: int = 0
    events_offset: int = 0
    scratchpad_bytes: int = 0
    tasks: dict[str, str] = field(default_factory=dict)
    synced: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path, loop_id: str) -> LoopState:
        try:
            data = json.loads((root / STATE_FILE).read_text(encoding="utf-8"))
            state = cls(**data)
        except (OSError, ValueError, TypeError):
            return cls(loop_id=loop_id)
        if state.loop_id != loop_id:  # a new loop: its own events file and iterations
            return cls(loop_id=loop_id, synced=state.synced, tasks=state.tasks)
        return state

    def save(self, root: Path) -> None:
        path = root / STATE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, json.dumps(self.__dict__, indent=1, sort_keys=True))


@dataclass
class Report:
    """What one call did (logged to stderr as one line)."""

    recorded: int | None = None
    synced: int = 0
    forgotten: int = 0
    injected: int = 0
    gated: int = 0  # items the search returned that the push gate held back
    skipped: list[str] = field(default_factory=list)
    # The summary item of the iteration this call recorded: the agent's scratchpad still
    # shows it, and the query (built from that scratchpad) matches it best of all.
    just_recorded: str | None = None


def needs_memory(payload: HookPayload) -> bool:
    """Whether the event asks for any work (the others return before opening a store)."""
    return payload.event in WORK_EVENTS


async def handle(
    payload: HookPayload,
    memory: Memory,
    *,
    max_items: int,
    gate: PushGate | None = None,
) -> Report:
    """Do what ``payload``'s event asks for; see the module's docstring. ``gate`` is what
    an item must pass to be written into memories.md (``Settings.push_gate("loop")``, which
    is none for the default model; ``None``: every item the search returns)."""
    space = Workspace(Path(payload.loop.workspace))
    state = LoopState.load(space.root, payload.loop.id)
    report = Report()
    event = payload.event
    current = payload.iteration.current
    try:
        if event == "iteration.start":
            if current - 1 > state.recorded and current > 1:
                report.recorded = await _record(
                    space, state, memory, payload, current - 1, None, report
                )
            await _sync(space, state, memory, report)
        elif event in ("loop.complete", "loop.error") and current > state.recorded:
            reason = payload.context.termination_reason or event.removeprefix("loop.")
            report.recorded = await _record(space, state, memory, payload, current, reason, report)
    except ReadOnly as exc:  # retrieval still works; what was not stored is stored later
        report.skipped.append(f"nothing stored: {exc}")
    if event == "iteration.start":
        await _inject(space, memory, max_items, gate, report)
    state.save(space.root)
    return report


async def _record(
    space: Workspace,
    state: LoopState,
    memory: Memory,
    payload: HookPayload,
    number: int,
    ended: str | None,
    report: Report,
) -> int:
    # The state moves on only once the record is stored: a refused record (another
    # process writes the store) is made again, from the same events, by the next call.
    events, offset = space.events_since(state.events_offset)
    notes, notes_end = _new_notes(space, state)
    changed, statuses = _task_changes(space, state)
    failures: list[Event | str] = [
        e for e in events if any(word in e.topic.lower() for word in _FAILED)
    ]
    failures += [f"task failed: {title}" for verb, title in changed if verb == "failed"]
    success = not failures if ended is None else ended == "completed" and not failures
    parts = [f"Iteration {number} (hat {payload.context.active_hat or 'ralph'})"]
    if ended is not None:
        parts.append(f"loop ended: {ended}")
    parts += [f"{e.topic}: {e.payload[:300]}" for e in events[-12:]]
    parts += [f"{verb} task: {title}" for verb, title in changed]
    if notes:
        parts.append(f"notes: {notes}")
    result = IterationResult(
        iteration=number,
        success=success,
        summary="\n".join(parts)[:_SUMMARY_CHARS],
        tool_calls=tuple(dict.fromkeys(e.topic for e in events))[:50],
        artifacts=tuple(_changed_files(space.root))[:50],
        error=_error(failures, ended),
    )
    key = f"ralph-v2:{payload.loop.id}:{number}"
    try:
        await memory.record(result, key)
        if len(parts) > 1:
            # The iteration row is history; the summary as an item is what later
            # iterations find by meaning (an error is stored as an error item by the record).
            report.just_recorded = await memory.remember(
                result.summary,
                ContextType.ITERATION,
                ("ralph-iteration",),
                f"{key}:summary",
                thread=loop_thread(payload.loop.id),
                iteration=number,
            )
    except IdempotencyConflict:
        # Recorded by a call that died before saving the state: its record stands, this
        # one (built from more events since) is not made twice, and the state moves on.
        report.skipped.append(f"iteration {number} was recorded before; kept as recorded")
    except ItemForgotten:
        # Recorded before, then forgotten: forget is final, and the state moves on.
        report.skipped.append(f"iteration {number} was recorded and forgotten since")
    state.recorded, state.events_offset = number, offset
    state.scratchpad_bytes, state.tasks = notes_end, statuses
    return number


def loop_thread(loop_id: str) -> str:
    """The thread of what one loop stores per iteration: loops that share a store number
    their iterations alike, and one loop's items must not become another's neighbours."""
    return f"ralph:{loop_id}"[:MAX_SOURCE_CHARS]


def _error(failures: list[Event | str], ended: str | None) -> str | None:
    if failures:
        last = failures[-1]
        return last if isinstance(last, str) else f"{last.topic}: {last.payload[:500]}"
    if ended is not None and ended != "completed":
        return f"loop ended: {ended}"
    return None


_TASK_VERBS = {"open": "added", "in_progress": "started", "closed": "closed", "failed": "failed"}


def _new_notes(space: Workspace, state: LoopState) -> tuple[str, int]:
    """The scratchpad's text since the last record, and its size now."""
    path = space.agent / "scratchpad.md"
    try:
        data = path.read_bytes()
    except OSError:
        return "", 0
    start = state.scratchpad_bytes if len(data) >= state.scratchpad_bytes else 0
    return data[start:].decode("utf-8", errors="ignore").strip()[-1_500:], len(data)


def _task_changes(
    space: Workspace, state: LoopState
) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """What happened to tasks since the last record, as (verb, title): added, started,
    closed, failed or reopened; and every task's status now."""
    tasks = space.tasks()
    changes = []
    for task in tasks:
        before = state.tasks.get(task.id)
        if before == task.status:
            continue
        verb = _TASK_VERBS.get(task.status, task.status)
        if before is not None and task.status == "open":
            verb = "reopened"  # closed, failed, or started and put back
        changes.append((verb, task.title))
    return changes, {t.id: t.status for t in tasks}


def _changed_files(root: Path) -> list[str]:
    """Files git sees changed or new (nothing outside a repository, or if git is slow)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=normal"],
            capture_output=True,
            text=True,
            timeout=3,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    names = [line[3:].split(" -> ")[-1] for line in done.stdout.splitlines() if len(line) > 3]
    return [n for n in names if not n.startswith(".ralph/")]


async def _sync(space: Workspace, state: LoopState, memory: Memory, report: Report) -> None:
    """The agent's memories into the store; those Ralph no longer has, out of it.

    Each memory is keyed by its id *and* its text: Ralph does not keep ids unique, and an
    edited memory is a new one (the old text is forgotten as gone). With no file to read
    (moved away, or not written yet) nothing is forgotten: an absent file is not a loop
    that deleted every memory."""
    text = await anyio.to_thread.run_sync(memories.read, space.memories)
    if text is None:
        report.skipped.append("no memories.md to sync (nothing forgotten)")
        return
    theirs = [m for m in memories.parse(text) if memories.MANAGED_TAG not in m.tags]
    synced_before = set(state.synced.values())
    seen: dict[str, str] = {}
    for found in theirs:
        digest = hashlib.sha256(found.content.encode()).hexdigest()[:12]
        key = f"ralph-mem:{found.id}:{digest}"
        tags = (MEMORY_TAG, found.memory_type, *found.tags)
        # No thread: memories are lessons that stand alone (as skills do), and the ones
        # synced together are neighbours only in the file, not in meaning.
        try:
            item_id = await memory.remember(found.content, _KINDS[found.memory_type], tags, key)
        except ItemForgotten:  # forgotten in the store since: forget is final, Ralph's or not
            report.skipped.append(f"memory {found.id} was forgotten; not stored again")
            continue
        if item_id not in synced_before:
            report.synced += 1
        seen[key] = item_id
    kept = set(seen.values())  # states written before keys held text map id -> item
    gone = [item for key, item in state.synced.items() if key not in seen and item not in kept]
    if gone:
        await memory.forget(gone)
        report.forgotten += len(gone)
    state.synced = seen


async def _inject(
    space: Workspace, memory: Memory, max_items: int, gate: PushGate | None, report: Report
) -> None:
    settings = _memory_settings(space.root)
    if not settings["enabled"]:
        report.skipped.append("memories are off in ralph.yml (memories.enabled)")
        return
    query = space.query()
    if not query:
        report.skipped.append("nothing to search for yet (no tasks, notes or PROMPT.md)")
        return
    found = await memory.search(query, min(max_items + 1, 50))  # one may be just_recorded
    relevant = pushed(found, gate)  # unasked: nothing when nothing answers the query
    report.gated = len(found) - len(relevant)
    fresh = [
        hit
        for hit in relevant
        if MEMORY_TAG not in hit.item.tags and hit.item.id != report.just_recorded
    ]
    judged = for_push(fresh, Repository.find(space.root))
    entries = _entries(judged.items[:max_items], judged.marks)
    written = await anyio.to_thread.run_sync(
        lambda: memories.write_managed(space.memories, entries, budget=settings["budget"])
    )
    report.injected = len(written)


def _entries(hits: list[RetrievedItem], marks: dict[str, str]) -> list[memories.Entry]:
    taken: set[str] = set()
    entries = []
    for hit in hits:
        item = hit.item
        entries.append(
            memories.Entry(
                id=memories.managed_id(item.id, item.created_at, taken),
                # One line, its attribution first, its text data (the renderer): Ralph
                # puts every memory into every prompt.
                content=memory_entry(Note(item, hit.score, marks.get(item.id)), _ENTRY_CHARS),
                tags=(item.content_type.value,),
                created=item.created_at.astimezone(UTC).strftime("%Y-%m-%d"),
            )
        )
    return entries


def _memory_settings(root: Path) -> dict[str, Any]:
    """``memories.enabled`` and ``budget`` as Ralph reads ``ralph.yml``: no ``memories:``
    key means enabled; the key without ``enabled`` means off (``CFG:1229``)."""
    try:
        document = yaml.safe_load((root / "ralph.yml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        document = {}
    section = document.get("memories") if isinstance(document, dict) else None
    if not isinstance(section, dict):
        return {"enabled": section is None, "budget": 0}
    budget = section.get("budget", 0)
    inject = section.get("inject", "auto")
    return {
        "enabled": section.get("enabled") is True and inject == "auto",
        "budget": budget if isinstance(budget, int) and budget > 0 else 0,
    }
