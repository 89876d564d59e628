"""``ralph-context redact``: take the secrets out of what a store already holds.

Redaction runs on every write since it was added; a store written before (or with other
rules, or with ``redaction.enabled: false``) still holds whatever its loops stored. This
pass reads everything the store keeps as text (hot items, archived items, the originals of
summarized items, iteration records, the tool packs' tables), redacts it with the current
rules, re-embeds the items whose text changed (a vector made from a secret is not kept),
rewrites those rows in place (same ids, places, counters), and then drops the old table
versions and rewrites the data files that still held the old rows, as ``forget`` does, so
the values leave the disk.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from ralph_context.engine import Engine
from ralph_context.errors import StoreError
from ralph_context.models import ContextItem
from ralph_context.privacy import Redactor
from ralph_context.storage.lifecycle.archive import ArchivedItem
from ralph_context.storage.table.filters import ItemFilter, sql_string
from ralph_context.storage.table.pack_space import PackSpace
from ralph_context.storage.table.requests import CLAIMS, REQUEST_KEYS
from ralph_context.storage.table.schema import ITEMS, ITERATIONS
from ralph_context.storage.table.usage import USAGE

__all__ = ["RedactReport", "redact_store"]

# Items read per page; iteration records read at most (a loop of a million iterations
# would need paging, not this pass).
_PAGE = 500
_MAX_ITERATIONS = 1_000_000
_EMBED_CHUNK = 64
# The store's own tables: items and iterations are rewritten above, the rest hold no text.
_CORE_TABLES = frozenset({ITEMS, ITERATIONS, USAGE, REQUEST_KEYS, CLAIMS})


@dataclass
class RedactReport:
    """What a pass changed (or, with ``dry_run``, would change)."""

    dry_run: bool
    items: int = 0
    archived: int = 0
    originals: int = 0
    iterations: int = 0
    pack_rows: int = 0
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def changed(self) -> int:
        return self.items + self.archived + self.originals + self.iterations + self.pack_rows


async def redact_store(engine: Engine, *, dry_run: bool = False) -> RedactReport:
    """Redact every text the store holds with ``engine``'s rules (see the module docstring).

    Raises:
        StoreError: Redaction is off in the settings, or the model is down (changed items
            must be embedded again); nothing is written.
        ActorUnavailable: The store is down.
    """
    if not engine.redactor.enabled:
        raise StoreError("redaction.enabled is false in the settings: nothing to redact with")
    redactor = Redactor(engine.settings.redaction)  # its counts are this pass's
    report = RedactReport(dry_run)
    storage = engine._require_storage()
    every = await _every(engine, archived=False)
    hot = [new for item in every if (new := redactor.item(item)) is not item]
    archived = await _changed_archive(engine, redactor, every)
    results = await storage.recent_iterations(_MAX_ITERATIONS)
    iterations = [r for r in results if redactor.iteration(r) is not r]
    report.items = len(hot)
    report.archived = sum(entry.reason == "archived" for entry, _ in archived)
    report.originals = len(archived) - report.archived
    report.iterations = len(iterations)
    report.pack_rows = await engine.in_packs(_pack_rows(redactor.clean, write=False))
    report.kinds = Counter(redactor.counts)
    if dry_run or not report.changed:
        return report
    hot_vectors = await _embedded(engine, [item.content for item in hot])
    archived_vectors = await _embedded(engine, [item.content for _, item in archived])
    await storage.rewrite(
        list(zip(hot, hot_vectors, strict=True)),
        [
            (entry, item, vector)
            for (entry, item), vector in zip(archived, archived_vectors, strict=True)
        ],
    )
    for result in iterations:
        await storage.add_iteration(redactor.iteration(result))
    await engine.in_packs(_pack_rows(redactor.clean, write=True))
    # The old rows are still in old versions and data files: rewrite and drop them now.
    await storage.scrub()
    return report


async def _every(engine: Engine, *, archived: bool) -> list[ContextItem]:
    """Every item of the hot table (``archived``: of the archive), page by page."""
    storage = engine._require_storage()
    found: list[ContextItem] = []
    while True:
        page, total = await storage.page_items(ItemFilter(), len(found), _PAGE, archived=archived)
        found.extend(page)
        if not page or len(found) >= total:
            return found


async def _changed_archive(
    engine: Engine, redactor: Redactor, hot: list[ContextItem]
) -> list[tuple[ArchivedItem, ContextItem]]:
    """Archive rows (archived items, and the originals of summarized ``hot`` items) whose
    text redaction changes."""
    storage = engine._require_storage()
    archived = [item.id for item in await _every(engine, archived=True)]
    summarized = [item.id for item in hot if item.original_length]
    wanted = list(dict.fromkeys([*archived, *summarized]))
    changed: list[tuple[ArchivedItem, ContextItem]] = []
    for start in range(0, len(wanted), _PAGE):
        for entry in await storage.find_archived(wanted[start : start + _PAGE]):
            new = redactor.item(entry.item)
            if new is not entry.item:
                changed.append((entry, new))
    return changed


async def _embedded(engine: Engine, texts: list[str]) -> list[Any]:
    """Vectors of ``texts``; a redacted text keeps no vector made from its secret."""
    vectors: list[Any] = []
    for start in range(0, len(texts), _EMBED_CHUNK):
        chunk = await engine.embed(texts[start : start + _EMBED_CHUNK])
        if any(vector is None for vector in chunk):
            raise StoreError(
                "the embedding model is down: redacted items must be embedded again "
                "(run `ralph-context model install`, then redact again); nothing was written"
            )
        vectors.extend(chunk)
    return vectors


def _pack_rows(clean: Callable[[str], str], *, write: bool) -> Callable[[PackSpace], int]:
    """A function counting (``write``: rewriting) the tool packs' rows whose texts change."""

    def run(space: PackSpace) -> int:
        changed = 0
        for name in space.db.table_names():
            table = space.db.open_table(name)
            if name in _CORE_TABLES or "id" not in table.schema.names:
                continue
            texts = [
                f.name
                for f in table.schema
                if str(f.type) in ("string", "large_string") and f.name != "id"
            ]
            if not texts:
                continue
            rows = table.search().select(["id", *texts]).limit(None).to_arrow().to_pylist()
            updates = []
            for row in rows:
                new = {
                    k: clean(v) if isinstance(v, str) and k != "id" else v for k, v in row.items()
                }
                if new != row:
                    updates.append(new)
            changed += len(updates)
            if write and updates:
                for new in updates:
                    values = {k: v for k, v in new.items() if k != "id"}
                    table.update(where=_id_is(new["id"]), values=values)
                _scrub_pack_table(table)
        return changed

    return run


def _scrub_pack_table(table: Any) -> None:
    """A pack table's old rows off the disk (``LanceStore.scrub`` leaves pack tables alone):
    every file holding an updated row rewritten, its indexes refreshed, old versions gone."""
    dataset = table.to_lance()
    dataset.optimize.compact_files(materialize_deletions_threshold=0.0)
    table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)


def _id_is(value: str) -> str:
    return f"id = {sql_string(value)}"
