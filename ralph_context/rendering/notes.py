"""What a face says about an item beside its content: its type, who recorded it, when, and
whether the code it names changed since.

A pushed line is read as memory, so it must say whose memory it is: the loop's own record
(the agent's hook, the Ralph loop) is worth more than a note any MCP client stored, and a
memory about a file rewritten since is a lead to check, not a fact. :func:`who` names the
recorder (``metadata.recorded_by``, stamped by the engine; for items stored before it was
kept, what their source says); :class:`Note` carries a staleness mark a checker of the code
(``codebase``) put on the item, in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ralph_context import origin
from ralph_context.models import ContextItem, RetrievedItem
from ralph_context.rendering.text import label

__all__ = ["Note", "age", "attribution", "note_of", "who"]


@dataclass(frozen=True)
class Note:
    """One item as a face shows it.

    Attributes:
        item: The item.
        score: Its relevance, when the face shows one (the MCP text).
        mark: What a check of the code found (``"src/config.py changed 2 hours ago"``),
            or ``None``.
    """

    item: ContextItem
    score: float | None = None
    mark: str | None = None


def note_of(entry: ContextItem | RetrievedItem | Note, marks: dict[str, str] | None = None) -> Note:
    """``entry`` as a :class:`Note`, with its mark from ``marks`` (by item id) if any."""
    if isinstance(entry, Note):
        return entry
    if isinstance(entry, RetrievedItem):
        item, score = entry.item, entry.score
    else:
        item, score = entry, None
    return Note(item, score, (marks or {}).get(item.id))


# Sources of items stored before ``recorded_by`` was kept, and what they say of the recorder.
_LEGACY_SOURCES = {"orchestrator": origin.RALPH_LOOP, "ace-skillbook": origin.SKILLBOOK}


def who(item: ContextItem) -> str:
    """Who recorded ``item``, in a face's words."""
    recorded = item.metadata.get(origin.RECORDED_BY)
    if isinstance(recorded, str) and recorded:
        return label(recorded, 70)
    client = item.metadata.get("client")
    if isinstance(client, str) and client in ("claude", "codex"):
        return origin.agent_hook(client)
    head = item.source.partition(":")[0]
    if head in ("claude", "codex"):
        return origin.agent_hook(head)
    return _LEGACY_SOURCES.get(item.source, "unrecorded source")


def age(when: datetime, now: datetime | None = None) -> str:
    """How long ago ``when`` was, in the largest whole unit (``3 days ago``)."""
    seconds = max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"


def attribution(
    note: Note, *, now: datetime | None = None, separator: str = " · ", kind: bool = True
) -> str:
    """``type · who · when`` (and the mark), as every face's bracket says it; without the
    type for a face whose heading names it."""
    fields = [who(note.item), age(note.item.created_at, now)]
    if kind:
        fields.insert(0, note.item.content_type.value)
    if note.mark:
        fields.append(label(note.mark, 160))
    return separator.join(fields)
