"""Whether the code an item is tied to (``anchors``) is still as it was when it was stored.

Each recorded file is looked at in the work tree now: gone (deleted, or no longer a file)
or changed (its blob id differs from the one recorded). When it changed is the file's
modification time: when it changed in this work tree, which is what the agent sees (a
commit pulled or checked out rewrites the file then). No ``git`` process runs: a check is a
stat per file, and a read only when the stat differs from the last look.

What a push does with that (:func:`for_push`): an item every recorded file of which is
gone is not pushed (it is still found by a search, marked: :func:`marks`); one with a
changed or gone file is marked on its line (``src/config.py changed 2 hours ago``) and
placed after the unmarked ones; the others are pushed as they are. An anchor of another
repository, or none, means nothing to check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar

from ralph_context.codebase.anchors import KEY
from ralph_context.codebase.repository import Repository
from ralph_context.models import ContextItem, RetrievedItem
from ralph_context.rendering import age

__all__ = ["Finding", "Pushable", "findings", "for_push", "marks", "words"]

T = TypeVar("T", ContextItem, RetrievedItem)
E = TypeVar("E")
# Files a mark names; the rest are counted.
_NAMED = 2


@dataclass(frozen=True)
class Finding:
    """A recorded file that is not as it was: gone, or changed at ``modified`` (epoch
    seconds)."""

    path: str
    gone: bool
    modified: float | None = None


@dataclass(frozen=True)
class Pushable(Generic[E]):
    """What a push may show, in the order to show it, with the marks to show beside each
    (by item id), and how many items were withheld."""

    items: list[E]
    marks: dict[str, str]
    withheld: int


def findings(item: ContextItem, repository: Repository) -> tuple[list[Finding], int]:
    """The recorded files of ``item`` that are not as they were, and how many files were
    checked (0: nothing to check: no anchor, another repository's, or unreadable)."""
    recorded = item.metadata.get(KEY)
    if not isinstance(recorded, dict) or recorded.get("repo") != repository.identity:
        return [], 0
    files = recorded.get("files")
    found: list[Finding] = []
    checked = 0
    for entry in files[:16] if isinstance(files, list) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("blob"), str):
            continue
        path = repository.named(entry.get("path"))
        if path is None:
            continue
        try:
            now = repository.blob(path)
        except OSError:  # unreadable, or leads outside: judge nothing about it
            continue
        checked += 1
        if now is None:
            found.append(Finding(str(entry["path"]), gone=True))
        elif now.id != entry["blob"]:
            found.append(Finding(str(entry["path"]), gone=False, modified=now.modified))
    return found, checked


def words(found: Sequence[Finding], recorded_at: datetime, now: datetime | None = None) -> str:
    """A mark in the words a line shows: the files that matter most (gone first, then the
    latest changes; two at most), and how many more."""
    ordered = sorted(found, key=lambda f: (not f.gone, -(f.modified or 0.0)))
    said = []
    for finding in ordered[:_NAMED]:
        if finding.gone:
            said.append(f"{finding.path} deleted")
            continue
        changed = datetime.fromtimestamp(finding.modified or 0.0, UTC)
        # Older than the item (a copy that kept its time): when is unknown, only that.
        when = age(changed, now) if changed >= recorded_at else "since"
        said.append(f"{finding.path} changed {when}")
    more = len(ordered) - len(said)
    text = "; ".join(said)
    return f"{text} (+{more} more file{'s' if more > 1 else ''})" if more else text


def for_push(entries: Sequence[T], repository: Repository | None) -> Pushable[T]:
    """``entries`` as a push shows them: those whose every recorded file is gone left out,
    the marked ones after the others (each group in its order)."""
    if repository is None:
        return Pushable(list(entries), {}, 0)
    fresh: list[T] = []
    marked: list[T] = []
    notes: dict[str, str] = {}
    withheld = 0
    for entry in entries:
        item = entry.item if isinstance(entry, RetrievedItem) else entry
        found, checked = findings(item, repository)
        if not found:
            fresh.append(entry)
        elif all(f.gone for f in found) and len(found) == checked:
            withheld += 1
        else:
            notes[item.id] = words(found, item.created_at)
            marked.append(entry)
    return Pushable(fresh + marked, notes, withheld)


def marks(entries: Sequence[T], repository: Repository | None) -> dict[str, str]:
    """The marks of ``entries`` for a search's answer, where nothing is left out (an item
    about deleted code is still found, said to be)."""
    if repository is None:
        return {}
    notes: dict[str, str] = {}
    for entry in entries:
        item = entry.item if isinstance(entry, RetrievedItem) else entry
        found, _checked = findings(item, repository)
        if found:
            notes[item.id] = words(found, item.created_at)
    return notes
