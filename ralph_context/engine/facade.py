"""The engine: one facade over the actors, and the owner of the degradation ladder.

``async with Engine(settings) as engine`` starts a supervisor with the embedding and storage
actors. Adapters (MCP server, Ralph hook, CLI) call only this class.

Retrieval never raises on a degraded path. It tries, in order:
``semantic`` (embed the query, vector search) → ``text`` (full-text BM25 over the same store,
used when the model is missing or the embedding actor is down) → ``none`` (an empty result
naming why). Whatever served the query is recorded in ``RetrievalResult.tier``.

``Engine`` owns its parts and delegates to them: the wiring (``wiring.py``: the actors, their
lifetime and health, the paths every part shares), the item paths (``items.py``: items
stored and read back, the store as a whole) and the iteration loop (``loop.py``: what a loop
records, the lifecycle after it). Searching is its own, in this module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Self, TypeVar

from ralph_context.actors.embedding import EmbeddingActor
from ralph_context.actors.inference import InferenceActor
from ralph_context.actors.storage.actor import StorageActor
from ralph_context.arguments import MAX_CANDIDATES, MAX_ITEMS, MAX_QUERY_CHARS, NewItem, check_query
from ralph_context.codebase import Worktrees
from ralph_context.config import EmbeddingsSettings, Settings
from ralph_context.embeddings.local import LocalEmbedder, Vectors, load_embedder
from ralph_context.engine.health import EngineHealth
from ralph_context.engine.items import ItemPage, Items
from ralph_context.engine.loop import IterationLoop
from ralph_context.engine.wiring import EngineWiring
from ralph_context.lifecycle.actor import LifecycleReport, Progress
from ralph_context.lifecycle.forgetting import ForgetReport
from ralph_context.metadata_filter import MetadataCondition
from ralph_context.models import (
    ContextItem,
    ContextState,
    ContextType,
    IterationResult,
    JsonValue,
    RetrievalResult,
)
from ralph_context.observed import Observations
from ralph_context.privacy import Redactor
from ralph_context.retrieval.retriever import Candidates
from ralph_context.runtime import Foreground, Supervisor
from ralph_context.storage.lance_store import MaintenanceReport, StoreStats
from ralph_context.storage.replicas.forwarding import Forwarded
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.pack_space import PackSpace
from ralph_context.validation import check_content, check_int, check_tags

__all__ = ["Engine", "EngineHealth", "ItemPage", "NewItem"]

T = TypeVar("T")


class Engine:
    """The context engine.

    Args:
        settings: Loaded configuration; ``None`` means defaults plus environment.
        model_loader: How the embedding actor loads its model (tests inject failures here).
        read_only: Read a store another process writes (a running server): no writer lock,
            no writes (they raise ``StoreError``) or lifecycle; reads see its latest commits.

    Raises:
        ConfigError: ``settings`` is ``None`` and the configuration is invalid.
        ModelMismatch: On entering, when the store was built with another embedding model
            (run ``ralph-context reindex``).
        StoreLocked: On entering, when another process writes the store (the message names
            it and its endpoint). Every other failure of a part degrades instead.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        model_loader: Callable[[EmbeddingsSettings], LocalEmbedder] = load_embedder,
        read_only: bool = False,
    ) -> None:
        self._wiring = EngineWiring(settings, model_loader=model_loader, read_only=read_only)
        self._items = Items(self._wiring)
        self._loop = IterationLoop(self._wiring)
        # The wiring's: settings, observations, redactor, the code items are tied to.
        self.settings: Settings = self._wiring.settings
        self.read_only = read_only
        self.observed: Observations = self._wiring.observed
        self.redactor: Redactor = self._wiring.redactor
        self.codebase: Worktrees = self._wiring.codebase

    async def __aenter__(self) -> Self:
        await self._wiring.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._wiring.stop(exc_type, exc, tb)

    @property
    def running(self) -> bool:
        """True between entering and leaving ``async with``."""
        return self._wiring.running

    @property
    def current_iteration(self) -> int:
        """The lifecycle clock: the latest iteration stored so far."""
        return self._wiring.current_iteration

    def health(self) -> EngineHealth:
        """Per-actor health and the tier a query would be served from right now."""
        return self._wiring.health()

    @property
    def inference(self) -> InferenceActor:
        """The language model actor: ``list_models()`` and ``complete(...)`` for the tools.

        ``down`` with no model configured (its calls raise ``ActorUnavailable`` at once,
        saying how to configure one): the engine keeps its extractive summaries.

        Raises:
            ActorUnavailable: The engine is not started.
        """
        return self._wiring.inference

    @property
    def supervisor(self) -> Supervisor:
        """The running supervisor (for health tooling and fault-injection tests).

        Raises:
            ActorUnavailable: The engine is not started.
        """
        return self._wiring.supervisor

    # The storage actor itself, for the whole-store jobs (transfer/) and tests.
    def _require_storage(self) -> StorageActor:
        return self._wiring.require_storage()

    def _require_embedding(self) -> EmbeddingActor:
        return self._wiring.require_embedding()

    @property
    def _foreground(self) -> Foreground:
        return self._wiring.foreground

    # Items one by one: stored, read back, paged (items.py).
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
        """Validate, embed and persist one item; see :meth:`Items.store`."""
        return await self._items.store(
            content,
            content_type,
            tags=tags,
            metadata=metadata,
            source=source,
            iteration=iteration,
            idempotency_key=idempotency_key,
        )

    async def store_many(self, entries: Sequence[NewItem]) -> list[ContextItem]:
        """Store several items with one embedding pass and one write; all or nothing."""
        return await self._items.store_many(entries)

    async def store_embedded(self, pairs: Sequence[tuple[ContextItem, Vectors]]) -> int:
        """Bulk path: persist items with this engine's vectors; see :meth:`Items.store_embedded`."""
        return await self._items.store_embedded(pairs)

    async def commit_forwarded(
        self,
        pairs: Sequence[tuple[ContextItem, Vectors | None]],
        key: str | None = None,
        fingerprint: str | None = None,
    ) -> Forwarded | None:
        """Another replica's write, committed here; see :meth:`Items.commit_forwarded`."""
        return await self._items.commit_forwarded(pairs, key, fingerprint)

    async def skills(
        self, tags: Sequence[str] | None = None, min_usefulness: float = 0.5
    ) -> list[ContextItem]:
        """Skills with usefulness at least ``min_usefulness``, most useful first."""
        return await self._items.skills(tags, min_usefulness)

    async def get(self, item_id: str) -> ContextItem:
        """One item by id, from the hot table or the archive; see :meth:`Items.get`."""
        return await self._items.get(item_id)

    async def original(self, item_id: str) -> str | None:
        """The full text a summarized item had before summarization, if it was summarized."""
        return await self._items.original(item_id)

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
        """A page of stored items, newest first (the console); see :meth:`Items.browse`."""
        return await self._items.browse(
            context_types=context_types,
            state=state,
            tags=tags,
            min_iteration=min_iteration,
            max_iteration=max_iteration,
            offset=offset,
            limit=limit,
        )

    async def stored_per_iteration(self, first: int, last: int) -> dict[int, int]:
        """Items of the hot table created in each iteration from ``first`` to ``last``."""
        return await self._items.stored_per_iteration(first, last)

    # Searching (retrieval/).
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
        counted: bool = True,
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
            prefer_types: Types scoring full type match, the others kept (the Ralph hook's
                ``retrieval.context_types``); ignored with ``context_types``.
            metadata: Only items whose metadata meets every condition
                (``{"key": "priority", "op": ">=", "value": 2}``; see ``metadata_filter``).
            counted: ``False``: the items do not count as retrieved (a person looking).

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
            counted=counted,
        )
        started = time.perf_counter()
        with self._foreground.busy():
            await self._wiring.sync_skillbook()
            result = await self._wiring.require_retriever().search(request)
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
        return await self._wiring.require_retriever().candidates(text, count, where, text_count)

    # The store as a whole (items.py), and vectors with the engine's model.
    async def in_packs(self, function: Callable[[PackSpace], T]) -> T:
        """Run a pack's table function inside the storage actor; see :meth:`Items.in_packs`."""
        return await self._items.in_packs(function)

    async def embed(self, texts: Sequence[str]) -> list[Vectors | None]:
        """One vector per text with the engine's model; ``None`` where the model is
        unavailable (callers fall back to full-text search, as retrieval does)."""
        return await self._wiring.embed_documents(list(texts))

    @property
    def semantic_unavailable(self) -> str | None:
        """Why vectors cannot be made or searched now, or ``None`` when they can."""
        return self._wiring.semantic_unavailable()

    async def stats(self) -> StoreStats:
        """What is stored: counts by type and state, size, versions, index and model."""
        return await self._items.stats()

    async def size_bytes(self) -> int:
        """Bytes the store takes on disk; cheaper than :meth:`stats`."""
        return await self._items.size_bytes()

    async def maintain(self, *, reclaim: bool = False) -> MaintenanceReport:
        """Compact the store and refresh its indexes now; see :meth:`Items.maintain`."""
        return await self._items.maintain(reclaim=reclaim)

    # What a loop records and the lifecycle scheduled after it (loop.py).
    async def record_iteration(
        self, result: IterationResult, *, idempotency_key: str | None = None
    ) -> ContextItem | None:
        """Persist an iteration's result, queue a lifecycle pass (:class:`IterationLoop`)."""
        return await self._loop.record_iteration(result, idempotency_key=idempotency_key)

    async def iteration(self, number: int) -> IterationResult:
        """The result reported for iteration ``number``."""
        return await self._loop.iteration(number)

    async def recent_iterations(self, last_n: int = 5) -> list[IterationResult]:
        """The last ``last_n`` iterations, newest first."""
        return await self._loop.recent_iterations(last_n)

    async def run_lifecycle(
        self, *, dry_run: bool = False, progress: Progress | None = None
    ) -> LifecycleReport:
        """Age, summarize, archive and prune now (normally queued after each iteration)."""
        return await self._loop.run_lifecycle(dry_run=dry_run, progress=progress)

    async def summarize_old(
        self, older_than: int = 20, *, dry_run: bool = False, progress: Progress | None = None
    ) -> LifecycleReport:
        """Summarize items older than ``older_than`` iterations, originals archived."""
        return await self._loop.summarize_old(older_than, dry_run=dry_run, progress=progress)

    async def prune_low_value(
        self, min_score: float = 0.3, *, dry_run: bool = False, progress: Progress | None = None
    ) -> LifecycleReport:
        """Delete items (hot and archived) whose usefulness is below ``min_score``."""
        return await self._loop.prune_low_value(min_score, dry_run=dry_run, progress=progress)

    async def forget(
        self,
        *,
        item_ids: Sequence[str] | None = None,
        context_types: Sequence[ContextType | str] | None = None,
        tags: Sequence[str] | None = None,
        older_than_iteration: int | None = None,
        iterations: Sequence[int] | None = None,
        dry_run: bool = False,
    ) -> ForgetReport:
        """Delete what the selectors pick, then scrub the store (:class:`IterationLoop`)."""
        return await self._loop.forget(
            item_ids=item_ids,
            context_types=context_types,
            tags=tags,
            older_than_iteration=older_than_iteration,
            iterations=iterations,
            dry_run=dry_run,
        )

    async def mark_useful(self, item_id: str, helpful: bool, reason: str | None = None) -> float:
        """Record feedback on an item; returns its new usefulness (:class:`IterationLoop`)."""
        return await self._loop.mark_useful(item_id, helpful, reason)
