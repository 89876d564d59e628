"""Keep the store's ``skill`` items in step with an ACE skillbook file.

A sync runs when the file's signature (mtime, size) changed since the last one: active skills
become ``skill`` items with ids ``skillbook:<skill id>`` and a usefulness computed from their
counts; edited skills are re-embedded, skills that were removed or deactivated are deleted,
and a skill whose only change is its counts just gets its new usefulness. Feedback on one of
these items goes back into the file's counts
(:func:`ralph_context.skillbook.formats.record_feedback`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph_context._logging import get_logger
from ralph_context.actors.storage.actor import StorageActor
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import InvalidTags
from ralph_context.models import ContextItem, ContextType
from ralph_context.origin import RECORDED_BY, SKILLBOOK
from ralph_context.skillbook.formats import (
    FileSignature,
    Skill,
    read_skillbook,
    record_feedback,
    signature,
)
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.validation import MAX_TAGS, check_tags

__all__ = ["ITEM_PREFIX", "SKILLBOOK_TAG", "SkillbookSync", "SyncReport"]

log = get_logger("ralph_context.skillbook")

ITEM_PREFIX = "skillbook:"
SKILLBOOK_TAG = "ace-skillbook"
# Skillbooks hold tens to hundreds of curated skills; this bounds one listing of them.
_MAX_SKILLS = 10_000

Embed = Callable[[list[str]], Awaitable[list[Vectors | None]]]


@dataclass(frozen=True)
class SyncReport:
    added: int = 0
    removed: int = 0
    rescored: int = 0


class SkillbookSync:
    """Syncs one skillbook file into the store through the storage actor."""

    def __init__(
        self,
        path: Path,
        storage: StorageActor,
        embed: Embed,
        clock: Callable[[], int],
        redact: Callable[[ContextItem], ContextItem] = lambda item: item,
    ) -> None:
        self.path = path
        self.storage = storage
        self.embed = embed
        self.clock = clock
        # A skill file is text like any other: its secrets are redacted before storing.
        self.redact = redact
        self._synced: FileSignature | None = None

    def due(self) -> bool:
        """True when the file changed (appeared, was edited, or vanished) since the last sync."""
        return signature(self.path) != self._synced

    async def sync(self) -> SyncReport:
        """Bring the store in line with the file (no-op if unchanged).

        Raises:
            ConfigError: The file is not a skillbook (the store is left as it was).
            ActorUnavailable: The store is down.
        """
        current = signature(self.path)
        if current == self._synced:
            return SyncReport()
        skills = read_skillbook(self.path).active if current is not None else ()
        wanted = {item.id: item for item in (self._item(skill) for skill in skills)}
        stored = {
            item.id: item
            for item in await self.storage.list_items(
                ItemFilter(types=(ContextType.SKILL,), tags_any=(SKILLBOOK_TAG,)), _MAX_SKILLS
            )
        }
        stale = {i for i, item in stored.items() if i not in wanted or _edited(item, wanted[i])}
        fresh = [item for i, item in wanted.items() if i not in stored or i in stale]
        rescored = 0
        for item_id, item in wanted.items():
            old = stored.get(item_id)
            if old is not None and item_id not in stale:
                delta = item.usefulness_score - old.usefulness_score
                if abs(delta) > 1e-9:
                    await self.storage.adjust_usefulness(item_id, delta)
                    rescored += 1
        if stale:
            await self.storage.delete_items(sorted(stale))
        if fresh:
            vectors = await self.embed([item.content for item in fresh])
            await self.storage.add_items(list(zip(fresh, vectors, strict=True)))
        self._synced = current
        report = SyncReport(added=len(fresh), removed=len(stale), rescored=rescored)
        log.info("skillbook_synced", path=str(self.path), **report.__dict__)
        return report

    async def feedback(self, item_id: str, helpful: bool) -> None:
        """Add the vote to the skill's counts in the file (if ``item_id`` is a skillbook
        item); the store's usefulness was already adjusted by the caller."""
        if not item_id.startswith(ITEM_PREFIX) or signature(self.path) is None:
            return
        record_feedback(self.path, item_id.removeprefix(ITEM_PREFIX), helpful)
        # Our own write is not a change to re-read: the counts now match the store.
        self._synced = signature(self.path)

    def _item(self, skill: Skill) -> ContextItem:
        return self.redact(self._as_item(skill))

    def _as_item(self, skill: Skill) -> ContextItem:
        return ContextItem(
            id=f"{ITEM_PREFIX}{skill.id}",
            content=skill.text,
            content_type=ContextType.SKILL,
            tags=_tags((SKILLBOOK_TAG, skill.section, *skill.keywords)),
            # The counts live in the file (and in usefulness), not here, where they would go
            # stale between re-embeddings.
            metadata={"skill_id": skill.id, "section": skill.section, RECORDED_BY: SKILLBOOK},
            source="ace-skillbook",
            created_iteration=self.clock(),
            usefulness_score=skill.usefulness,
            original_length=len(skill.text),
        )


def _edited(stored: ContextItem, wanted: ContextItem) -> bool:
    return (stored.content, stored.tags) != (wanted.content, wanted.tags)


def _tags(candidates: Sequence[str]) -> tuple[str, ...]:
    """Sections and keywords that are valid tags, each once (others are dropped, not fatal)."""
    kept: list[str] = []
    for tag in candidates:
        try:
            (clean,) = check_tags([tag])
        except (InvalidTags, ValueError):
            continue
        if clean not in kept:
            kept.append(clean)
    return tuple(kept[:MAX_TAGS])
