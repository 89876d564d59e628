"""The engine: one facade over the actors, and the owner of the degradation ladder.

``async with Engine(settings) as engine`` starts a supervisor with the embedding and storage
actors. Adapters (MCP server, Ralph hook, CLI) call only this class.

Retrieval never raises on a degraded path. It tries, in order:
``semantic`` (embed the query, vector search) → ``text`` (full-text BM25 over the same store,
used when the model is missing or the embedding actor is down) → ``none`` (an empty result
naming why). Whatever served the query is recorded in ``RetrievalResult.tier``.

This module holds what adapters call to store and to search; ``engine_loop.py`` what a loop
records and the lifecycle scheduled after it; ``engine_wiring.py`` the actors, their
lifetime and health, and the paths all of it shares.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import anyio.lowlevel
import numpy as np

from ralph_context.arguments import (
    MAX_CANDIDATES,
    MAX_ITEMS,
    MAX_QUERY_CHARS,
    NewItem,
    check_browse,
    check_query,
)
from ralph_context.embeddings.local import Vectors
from ralph_context.engine_loop import IterationLoop
from ralph_context.engine_wiring import EngineHealth
from ralph_context.errors import (
    ItemNotFound,
    StoreError,
)
from ralph_context.metadata_filter import MetadataCondition
from ralph_context.models import (
    ContextItem,
    ContextState,
    ContextType,
    JsonValue,
    RetrievalResult,
)
from ralph_context.retrieval import Candidates
from ralph_context.storage.filters import ItemFilter
from ralph_context.storage.lance_store import MaintenanceReport, StoreStats
from ralph_context.storage.pack_space import PackSpace
from ralph_context.validation import (
    check_content,
    check_int,
    check_item_id,
    check_score,
    check_tags,
)

__all__ = ["Engine", "EngineHealth", "ItemPage", "NewItem"]

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


class Engine(IterationLoop):
    """The context engine.

    Args:
        settings: Loaded configuration; ``None`` means defaults plus environment.
        model_loader: How the embedding actor loads its model (tests inject failures here).
        read_only: Read a store another process writes (a running server): no writer lock,
            nothing written (writes raise ``StoreError``), no lifecycle; searches see the
            writer's latest commits.

    Raises:
        ConfigError: ``settings`` is ``None`` and the configuration is invalid.
        ModelMismatch: On entering, when the store was built with another embedding model
            (run ``ralph-context reindex``).
        StoreLocked: On entering, when another process writes the store (the message names
            it and its endpoint). Every other failure of a part degrades instead.
    """

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
        findable by the text tier. With ``idempotency_key``, a call repeating the key of an
        earlier one returns the item that one stored and writes nothing (a client that
        timed out retries safely; see ``storage.requests``).

        ``source`` names the thread the item belongs to (a conversation, a session, a
        task): with the same ``iteration``, items of one source stored one after another
        are neighbours in retrieval. ``iteration`` defaults to the latest recorded.

        Raises:
            InvalidInput: Empty, oversized or non-UTF-8 content, unknown type, bad tags,
                metadata or source (at most 200 characters, no control characters), an
                iteration more than ``lifecycle.max_iteration_step`` past the latest, or a
                key that is not 1-200 characters of text. Nothing is stored.
            ActorUnavailable: The store itself is down.
        """
        entry = NewItem(content, content_type, tags, metadata, source, iteration)
        if idempotency_key is None:
            (item,) = await self.store_many([entry])
            return item
        key = check_item_id(idempotency_key, name="idempotency_key")
        built = self._build_item(entry)
        storage = self._require_storage()
        with self._foreground.busy():
            first = storage.request_target(key)
            if first is not None:
                found = await storage.get_items([first])
                if found:
                    return found[0]
            (vector,) = await self._embed_documents([built.content])
            stored, _written = await storage.add_keyed(built, vector, key)
            return stored

    async def store_many(self, entries: Sequence[NewItem]) -> list[ContextItem]:
        """Store several items with one embedding pass and one write; all or nothing.

        Raises:
            InvalidInput: Any entry is invalid; nothing is stored.
            ActorUnavailable: The store itself is down.
        """
        items: list[ContextItem] = []
        for start in range(0, len(entries), _BUILT_AT_ONCE):
            items += [self._build_item(e) for e in entries[start : start + _BUILT_AT_ONCE]]
            await anyio.lowlevel.checkpoint()
        if not items:
            return []
        with self._foreground.busy():
            return await self._persist(items)

    async def store_embedded(self, pairs: Sequence[tuple[ContextItem, Vectors]]) -> int:
        """Bulk path: persist items whose vectors were computed by this engine's model.

        Used by benchmarks to load large stores without re-embedding near-identical texts.
        Vectors must be unit length and of the model's dimension.

        Raises:
            StoreError: No model is loaded, or a vector has the wrong shape.
        """
        dimension = self._require_embedding_model()
        limit = self.settings.storage.max_content_bytes
        # Redacted after embedding here (the caller brings the vectors): a bulk load of
        # benchmark texts, not a loop's output.
        pairs = [(self.redactor.item(item), vector) for item, vector in pairs]
        for item, vector in pairs:
            check_content(item.content, max_bytes=limit)
            check_tags(item.tags)
            if vector.shape != (dimension,) or not np.isfinite(vector).all():
                raise StoreError(f"item {item.id}: vector must be {dimension} finite numbers")
            # Similarity is a plain dot product, which is cosine only for unit vectors.
            if abs(float(np.linalg.norm(vector)) - 1.0) > 1e-3:
                raise StoreError(f"item {item.id}: vector is not unit length")
        await self._require_storage().add_items(list(pairs))
        return len(pairs)

    async def skills(
        self, tags: Sequence[str] | None = None, min_usefulness: float = 0.5
    ) -> list[ContextItem]:
        """Skills with usefulness at least ``min_usefulness``, most useful first.

        Raises:
            InvalidInput: Bad tags or threshold.
        """
        threshold = check_score(min_usefulness, name="min_score")
        where = ItemFilter(types=(ContextType.SKILL,), tags_any=check_tags(tags))
        await self._sync_skillbook()
        found = await self._require_storage().list_items(where, MAX_SKILLS)
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
        storage = self._require_storage()
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
        found = await self._require_storage().find_archived([target])
        originals = [e for e in found if e.reason == "original"]
        return originals[0].item.content if originals else None

    async def search(
        self,
        query: str,
        *,
        max_items: int | None = None,
        context_types: Sequence[ContextType | str] | None = None,
        min_score: float | None = None,
        max_tokens: int | None = None,
        tags: Sequence[str] | None = None,
        prefer_types: Sequence[ContextType | str] | None = None,
        metadata: Sequence[MetadataCondition | Mapping[str, object]] | None = None,
    ) -> RetrievalResult:
        """Find the items most relevant to ``query``, best first, within a token budget.

        Args:
            query: What the loop is working on; only the first 500 characters are used.
            max_items: 1-50; defaults to ``retrieval.max_items_per_query``.
            context_types: Only these types (they also count as requested for type match);
                ``None`` means every type.
            min_score: Drop items whose relevance is below this; defaults to
                ``retrieval.min_relevance_score``.
            max_tokens: Estimated prompt tokens the items may use together; defaults to
                ``retrieval.max_context_tokens``.
            tags: Only items carrying at least one of these tags.
            prefer_types: Types that score full type match without filtering the others out
                (the Ralph hook's ``retrieval.context_types``). Ignored if ``context_types``
                is given.
            metadata: Only items whose metadata meets every condition
                (``{"key": "priority", "op": ">=", "value": 2}``; see ``metadata_filter``).

        Raises:
            InvalidInput: A bad argument. Failures of the engine's parts never raise; they
                lower the tier of the result.
        """
        request = check_query(
            self.settings.retrieval,
            query,
            max_items=max_items,
            context_types=context_types,
            min_score=min_score,
            max_tokens=max_tokens,
            tags=tags,
            prefer_types=prefer_types,
            metadata=metadata,
        )
        started = time.perf_counter()
        with self._foreground.busy():
            await self._sync_skillbook()
            result = await self._require_retriever().search(request)
        elapsed = (time.perf_counter() - started) * 1000
        self.observed.retrieval(elapsed, result.tier, result.degraded_reason)
        return result

    async def candidates(
        self,
        query: str,
        *,
        limit: int = MAX_ITEMS,
        text_limit: int | None = None,
        tags: Sequence[str] | None = None,
    ) -> Candidates:
        """The semantic rung's raw halves for ``query``: vector top-``limit`` and full-text
        top-``text_limit`` (default ``limit``), their pool and its neighbours, before the
        relevance formula.

        For evaluations that compare retrieval modes (``ralph-context bench retrieval``) and
        for debugging a ranking; loops call :meth:`search`, which degrades instead of raising.

        Raises:
            InvalidInput: A bad argument.
            ActorUnavailable, StoreError: No model, or the store failed.
        """
        text = check_content(query, max_bytes=1 << 20, name="query")[:MAX_QUERY_CHARS]
        count = check_int(limit, name="limit", high=MAX_CANDIDATES)
        text_count = (
            None
            if text_limit is None
            else check_int(text_limit, name="text_limit", high=MAX_CANDIDATES)
        )
        where = ItemFilter(tags_any=check_tags(tags))
        return await self._require_retriever().candidates(text, count, where, text_count)

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
        items, total = await self._require_storage().page_items(
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
        return await self._require_storage().iteration_counts(low, high)

    async def in_packs(self, function: Callable[[PackSpace], T]) -> T:
        """Run a tool pack's blocking table function inside the storage actor (the store's
        single writer), so pack writes are serialised with every other write.

        Raises:
            ActorUnavailable: The storage actor is down or slower than the timeout.
            StoreError: The function failed for a reason other than our typed errors.
        """
        redact = self.redactor.clean

        def redacting(space: PackSpace) -> T:
            space.redact = redact  # pack tables redact the text columns they write
            return function(space)

        return await self._require_storage().in_packs(redacting)

    async def embed(self, texts: Sequence[str]) -> list[Vectors | None]:
        """One vector per text with the engine's model; ``None`` where the model is
        unavailable (callers fall back to full-text search, as retrieval does)."""
        return await self._embed_documents(list(texts))

    @property
    def semantic_unavailable(self) -> str | None:
        """Why vectors cannot be made or searched now, or ``None`` when they can."""
        return self._semantic_unavailable()

    async def stats(self) -> StoreStats:
        """What is stored: counts by type and state, size, versions, index and model.

        Raises:
            ActorUnavailable: The store is down.
        """
        return await self._require_storage().stats()

    async def size_bytes(self) -> int:
        """Bytes the store takes on disk (hot tables, archive, old versions); cheaper than
        :meth:`stats`, which also scans columns.

        Raises:
            ActorUnavailable: The store is down.
        """
        return await self._require_storage().size_bytes()

    async def maintain(self, *, reclaim: bool = False) -> MaintenanceReport:
        """Compact the store and build or refresh its indexes now; ``reclaim`` also drops
        the old versions kept for ``storage.version_retention_minutes`` (on a local store
        only safe when no other process reads it; on object storage, versions a replica may
        still read are kept). What was done: on object storage, nothing while another
        replica holds the maintenance lease (the report's notes say so)."""
        return await self._require_storage().maintain(reclaim=reclaim)
