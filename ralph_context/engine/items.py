"""What adapters store and read back, item by item: one item or several (checked,
redacted, embedded and persisted in one write), a bulk load that brings its own vectors, an
item by id (live or archived) and its original text, the skills, and a page of the store
for people looking through it (the console); and the store as a whole: the tool packs'
tables, counts, size, maintenance. ``Engine`` owns one ``Items`` and delegates these calls
to it; it reaches the actors through the engine's wiring (``wiring.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import anyio.lowlevel
import numpy as np

from ralph_context.actors.storage.actor import StorageActor
from ralph_context.arguments import NewItem, check_browse
from ralph_context.config import Settings
from ralph_context.embeddings.local import Vectors
from ralph_context.engine.replay import refuse_replayed
from ralph_context.errors import InvalidInput, ItemNotFound, StoreError
from ralph_context.models import ContextItem, ContextState, ContextType, JsonValue
from ralph_context.privacy import Redactor
from ralph_context.runtime import Foreground
from ralph_context.storage.lance_store import MaintenanceReport, StoreStats
from ralph_context.storage.replicas.forwarding import Forwarded
from ralph_context.storage.store.items import forgotten_key
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.pack_space import PackSpace
from ralph_context.storage.table.requests import item_fingerprint
from ralph_context.validation import (
    check_content,
    check_int,
    check_item_id,
    check_score,
    check_tags,
)

__all__ = ["MAX_SKILLS", "ItemPage", "Items", "ItemsWiring"]

T = TypeVar("T")

# Skills listed by get_skills at most (they are few and curated).
MAX_SKILLS = 1_000
# Entries of a store_many checked and redacted between two turns of the event loop: 10,000
# at once held it 1.5-3.6 s, every search of the server waiting.
_BUILT_AT_ONCE = 256


@dataclass(frozen=True)
class ItemPage:
    """A page of :meth:`Engine.browse`: its items, how many the filter selects, and where
    the page starts among them."""

    items: tuple[ContextItem, ...]
    total: int
    offset: int


class ItemsWiring(Protocol):
    """What the item paths reach of the engine's wiring (``EngineWiring`` is one)."""

    settings: Settings
    redactor: Redactor
    foreground: Foreground

    def build_item(self, entry: NewItem) -> ContextItem: ...
    async def persist(self, items: list[ContextItem]) -> list[ContextItem]: ...
    async def embed_documents(self, texts: list[str]) -> list[Vectors | None]: ...
    async def sync_skillbook(self) -> None: ...
    def require_storage(self) -> StorageActor: ...
    def require_embedding_model(self) -> int: ...


class Items:
    """The item paths of :class:`Engine`, on its wiring."""

    def __init__(self, wiring: ItemsWiring) -> None:
        self._wiring = wiring

    async def store(
        self,
        content: str | bytes,
        content_type: ContextType | str,
        *,
        tags: Sequence[str] | None = None,
        metadata: dict[str, JsonValue] | None = None,
        source: str = "",
        iteration: int | None = None,
        idempotency_key: str | None = None,
    ) -> ContextItem:
        """Validate, embed and persist one item.

        If the embedding model is unavailable the item is stored without a vector and stays
        findable by the text tier. With ``idempotency_key``, a call repeating the key and
        the arguments of an earlier one returns the item that one stored and writes nothing
        (a client that timed out retries safely; see ``storage.table.requests``).

        ``source`` names the thread the item belongs to (a conversation, a session, a
        task): with the same ``iteration``, items of one source stored one after another
        are neighbours in retrieval. ``iteration`` defaults to the iteration in progress
        (one past the latest recorded): a loop records iteration N at its end, after
        storing N's items.

        Raises:
            InvalidInput: Empty, oversized or non-UTF-8 content, unknown type, bad tags,
                metadata or source (at most 200 characters, no control characters), an
                iteration more than ``lifecycle.max_iteration_step`` past the latest, or a
                key that is not 1-200 characters of text. Nothing is stored.
            IdempotencyConflict: The key was used before with other arguments.
            ItemForgotten: The key's item was forgotten since: a retry does not bring it
                back (``storage.lifecycle.tombstones``).
            ActorUnavailable: The store itself is down.
        """
        entry = NewItem(content, content_type, tags, metadata, source, iteration)
        if idempotency_key is None:
            (item,) = await self.store_many([entry])
            return item
        key = check_item_id(idempotency_key, name="idempotency_key")
        built = self._wiring.build_item(entry)
        fingerprint = item_fingerprint(built, iteration)
        storage = self._wiring.require_storage()
        if storage.key_forgotten(key):  # refused before the model spends anything on it
            raise forgotten_key(key)
        with self._wiring.foreground.busy():
            first = storage.request_target(key)
            if first is not None:
                found = await storage.get_items([first.target_for(key, fingerprint)])
                if found:
                    return found[0]
            (vector,) = await self._wiring.embed_documents([built.content])
            stored, _written = await storage.add_keyed(built, vector, key, fingerprint)
            return stored

    async def store_many(self, entries: Sequence[NewItem]) -> list[ContextItem]:
        """Store several items with one embedding pass and one write; all or nothing.

        Raises:
            InvalidInput: Any entry is invalid; nothing is stored.
            ItemForgotten: Stored for a capture the hooks spooled before a forget that
                deleted its text (``replay``); nothing is stored.
            ActorUnavailable: The store itself is down.
        """
        items: list[ContextItem] = []
        for start in range(0, len(entries), _BUILT_AT_ONCE):
            items += [self._wiring.build_item(e) for e in entries[start : start + _BUILT_AT_ONCE]]
            await anyio.lowlevel.checkpoint()
        if not items:
            return []
        refuse_replayed(self._wiring.require_storage(), items)  # a spooled capture's
        with self._wiring.foreground.busy():
            return await self._wiring.persist(items)

    async def store_embedded(self, pairs: Sequence[tuple[ContextItem, Vectors]]) -> int:
        """Bulk path: persist items whose vectors were computed by this engine's model.

        Used by benchmarks to load large stores without re-embedding near-identical texts.
        Vectors must be unit length and of the model's dimension.

        Raises:
            StoreError: No model is loaded, or a vector has the wrong shape.
        """
        dimension = self._wiring.require_embedding_model()
        limit = self._wiring.settings.storage.max_content_bytes
        # Redacted after embedding here (the caller brings the vectors): a bulk load of
        # benchmark texts, not a loop's output.
        pairs = [(self._wiring.redactor.item(item), vector) for item, vector in pairs]
        for item, vector in pairs:
            check_content(item.content, max_bytes=limit)
            check_tags(item.tags)
            if (refused := _vector_refusal(item, vector, dimension)) is not None:
                raise StoreError(refused)
            # Similarity is a plain dot product, which is cosine only for unit vectors.
            if abs(float(np.linalg.norm(vector)) - 1.0) > 1e-3:
                raise StoreError(f"item {item.id}: vector is not unit length")
        await self._wiring.require_storage().add_items(list(pairs))
        return len(pairs)

    async def commit_forwarded(
        self,
        pairs: Sequence[tuple[ContextItem, Vectors | None]],
        key: str | None = None,
        fingerprint: str | None = None,
    ) -> Forwarded | None:
        """Commit another replica's write here, where the store's writes are committed
        (``storage.replicas.forwarding``): its items (one with ``key``) as that replica built and
        embedded them, checked again; ``None`` when this replica does not commit the store's
        writes now (the sender then commits it itself).

        Raises:
            InvalidInput: A vector of the wrong shape, or a keyed write of several items.
            IdempotencyConflict: ``key`` was used for another request.
        """
        storage = self._wiring.require_storage()
        if not await storage.takes_forwarded():
            return None
        dimension = storage.dimension
        for item, vector in pairs:
            if vector is not None and (refused := _vector_refusal(item, vector, dimension)):
                raise InvalidInput(refused)
        with self._wiring.foreground.busy():
            if key is None:
                stored, written = await storage.add_items(pairs, forward=False), True
            elif len(pairs) == 1:
                ((item, vector),) = pairs
                one, written = await storage.add_keyed(
                    item, vector, key, fingerprint, forward=False
                )
                stored = [one]
            else:
                raise InvalidInput(f"a keyed write holds one item, not {len(pairs)}")
        return Forwarded(stored, written, await storage.items_version())

    async def skills(
        self, tags: Sequence[str] | None = None, min_usefulness: float = 0.5
    ) -> list[ContextItem]:
        """Skills with usefulness at least ``min_usefulness``, most useful first.

        Raises:
            InvalidInput: Bad tags or threshold.
        """
        threshold = check_score(min_usefulness, name="min_score")
        where = ItemFilter(types=(ContextType.SKILL,), tags_any=check_tags(tags))
        await self._wiring.sync_skillbook()
        found = await self._wiring.require_storage().list_items(where, MAX_SKILLS)
        kept = [item for item in found if item.usefulness_score >= threshold]
        kept.sort(key=lambda item: (-item.usefulness_score, -item.created_iteration))
        return kept

    async def get(self, item_id: str) -> ContextItem:
        """One item by id, from the hot table or the archive.

        Raises:
            ItemNotFound: No such item.
            ActorUnavailable: The store is down.
        """
        target = check_item_id(item_id)
        storage = self._wiring.require_storage()
        found = await storage.get_items([target])
        if found:
            return found[0]
        archived = [e for e in await storage.find_archived([target]) if e.reason == "archived"]
        if not archived:
            raise ItemNotFound(f"no context item with id {item_id!r}")
        return archived[0].item

    async def original(self, item_id: str) -> str | None:
        """The full text a summarized item had before summarization, if it was summarized.

        Raises:
            InvalidInput: A malformed id.
        """
        target = check_item_id(item_id)
        found = await self._wiring.require_storage().find_archived([target])
        originals = [e for e in found if e.reason == "original"]
        return originals[0].item.content if originals else None

    async def browse(
        self,
        *,
        context_types: Sequence[ContextType | str] | None = None,
        state: ContextState | str | None = None,
        tags: Sequence[str] | None = None,
        min_iteration: int | None = None,
        max_iteration: int | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> ItemPage:
        """A page of stored items, newest first, for people looking through a store (the
        console); loops call :meth:`search`. ``state`` ``archived`` pages the archive, any
        other state the hot table; ``None``: every item in the hot table.

        Raises:
            InvalidInput: A bad filter, offset or limit (1-500).
            ActorUnavailable, StoreError: The store is down.
        """
        page = check_browse(context_types, state, tags, min_iteration, max_iteration, offset, limit)
        items, total = await self._wiring.require_storage().page_items(
            page.where, page.offset, page.limit, archived=page.archived
        )
        return ItemPage(tuple(items), total, page.offset)

    async def stored_per_iteration(self, first: int, last: int) -> dict[int, int]:
        """Items of the hot table created in each iteration from ``first`` to ``last``
        (an iteration that stored none is missing).

        Raises:
            InvalidInput: ``first`` or ``last`` is not a non-negative integer.
            ActorUnavailable, StoreError: The store is down.
        """
        low = check_int(first, name="first", low=0)
        high = check_int(last, name="last", low=0)
        return await self._wiring.require_storage().iteration_counts(low, high)

    async def in_packs(self, function: Callable[[PackSpace], T]) -> T:
        """Run a tool pack's blocking table function inside the storage actor (the store's
        single writer), so pack writes are serialised with every other write.

        Raises:
            ActorUnavailable: The storage actor is down or slower than the timeout.
            StoreError: The function failed for a reason other than our typed errors.
        """
        redact = self._wiring.redactor.clean

        def redacting(space: PackSpace) -> T:
            space.redact = redact  # pack tables redact the text columns they write
            return function(space)

        return await self._wiring.require_storage().in_packs(redacting)

    async def stats(self) -> StoreStats:
        """What is stored: counts by type and state, size, versions, index and model.

        Raises:
            ActorUnavailable: The store is down.
        """
        return await self._wiring.require_storage().stats()

    async def size_bytes(self) -> int:
        """Bytes the store takes on disk (hot tables, archive, old versions); cheaper than
        :meth:`stats`, which also scans columns.

        Raises:
            ActorUnavailable: The store is down.
        """
        return await self._wiring.require_storage().size_bytes()

    async def maintain(self, *, reclaim: bool = False) -> MaintenanceReport:
        """Compact the store and build or refresh its indexes now; ``reclaim`` also drops
        the old versions kept for ``storage.version_retention_minutes`` (on a local store
        only safe when no other process reads it; on object storage, versions a replica may
        still read are kept). What was done: on object storage, nothing while another
        replica holds the maintenance lease (the report's notes say so)."""
        return await self._wiring.require_storage().maintain(reclaim=reclaim)


def _vector_refusal(item: ContextItem, vector: Vectors, dimension: int | None) -> str | None:
    """Why ``item``'s ``vector`` cannot be stored beside this model's (``None``: it can):
    a bulk load and another replica's write bring their own vectors."""
    if vector.shape != (dimension,) or not np.isfinite(vector).all():
        return f"item {item.id}: vector must be {dimension} finite numbers"
    return None
