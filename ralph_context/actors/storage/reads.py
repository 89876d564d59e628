"""The storage actor's reads: each runs at once in a worker thread beside the writes queued
in its inbox, on the store open at the call; a failure is a ``StoreError`` for that caller
only, and a failing vector index answers one too while its repair is queued.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio

from ralph_context._logging import get_logger
from ralph_context.actors.storage.requests import (
    Adjacent,
    RepairVectorIndex,
    StorageRequest,
    TextHit,
    VectorHit,
)
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import ActorUnavailable, RalphContextError, StoreError
from ralph_context.models import ContextItem, IterationResult
from ralph_context.runtime import Actor, ActorState
from ralph_context.storage.integrity.salvage import Salvage
from ralph_context.storage.lance_store import AgeRow, Forgettable, LanceStore, StoreStats
from ralph_context.storage.lifecycle.archive import ArchivedItem
from ralph_context.storage.table.filters import DueFilter, ForgetSelection, ItemFilter

log = get_logger("ralph_context.storage")

T = TypeVar("T")
# A damaged vector index is rebuilt at most this often (seconds): a rebuild that keeps failing
# must not turn every query into a full retraining.
_REPAIR_EVERY = 60.0


class StorageReads(Actor[StorageRequest, object]):
    """The read helpers of :class:`~ralph_context.actors.storage.actor.StorageActor` (see the
    module's docstring); the state they use is declared here and set by its ``__init__``."""

    _store: LanceStore | None
    timeout: float
    vector_fault: str | None
    _repair_after: float
    _readers: anyio.CapacityLimiter

    async def get_items(self, ids: Sequence[str]) -> list[ContextItem]:
        return await self._read(LanceStore.get_items, list(ids))

    async def all_ids(self) -> list[str]:
        return await self._read(LanceStore.all_ids)

    async def items_with_vectors(
        self, ids: Sequence[str]
    ) -> list[tuple[ContextItem, Vectors | None]]:
        return await self._read(LanceStore.items_with_vectors, list(ids))

    async def salvage(self, *, iterations: bool = False) -> Salvage:
        return await self._read(LanceStore.salvage, iterations)

    async def salvaged_items(
        self, salvage: Salvage, fragment: int, offset: int, limit: int
    ) -> list[tuple[ContextItem, Vectors | None]]:
        return await self._read(LanceStore.salvaged_items, salvage, fragment, offset, limit)

    async def salvaged_iterations(
        self, salvage: Salvage, fragment: int, offset: int, limit: int
    ) -> list[IterationResult]:
        return await self._read(LanceStore.salvaged_iterations, salvage, fragment, offset, limit)

    async def list_items(self, where: ItemFilter, limit: int) -> list[ContextItem]:
        return await self._read(LanceStore.list_items, where, limit)

    async def page_items(
        self, where: ItemFilter, offset: int, limit: int, *, archived: bool = False
    ) -> tuple[list[ContextItem], int]:
        return await self._read(LanceStore.page_items, where, offset, limit, archived)

    async def iteration_counts(self, first: int, last: int) -> dict[int, int]:
        return await self._read(LanceStore.iteration_counts, first, last)

    async def vector_search(
        self, vector: Vectors, limit: int, where: ItemFilter
    ) -> list[VectorHit]:
        """Nearest items by cosine, best first, with damage contained: a failing index
        (corrupt or missing files) answers a ``StoreError``, so retrieval steps down to
        full-text search instead of failing every query, and a rebuild of the index is
        queued (at most once a minute)."""
        try:
            return await self._read(LanceStore.vector_search, vector, limit, where, contain=False)
        except RalphContextError:
            raise
        except Exception as exc:
            self.vector_fault = f"{type(exc).__name__}: {exc}"
            log.error("vector_search_failed", error=self.vector_fault)
            if anyio.current_time() >= self._repair_after:
                self._repair_after = anyio.current_time() + _REPAIR_EVERY
                self.tell(RepairVectorIndex())
            raise StoreError(f"vector search failed ({self.vector_fault})") from exc

    async def text_search(self, text: str, limit: int, where: ItemFilter) -> list[TextHit]:
        """Full-text (BM25) hits, best first, with raw scores and vectors."""
        return await self._read(LanceStore.text_search, text, limit, where)

    async def archive_search(
        self, vector: Vectors, limit: int, where: ItemFilter
    ) -> list[VectorHit]:
        """Archived items nearest to ``vector``, best first, with cosine and vector."""
        return await self._read(LanceStore.archive_search, vector, limit, where)

    async def neighbours(self, items: Sequence[ContextItem], where: ItemFilter) -> list[Adjacent]:
        """Items adjacent to ``items`` in the store's order with the same source and
        iteration, matching ``where``; ``items`` themselves are not repeated."""
        return await self._read(LanceStore.neighbours, list(items), where)

    async def recent_iterations(self, last_n: int) -> list[IterationResult]:
        return await self._read(LanceStore.recent_iterations, last_n)

    async def stats(self) -> StoreStats:
        return await self._read(LanceStore.stats)

    async def latest_iteration(self) -> int:
        return await self._read(LanceStore.latest_iteration)

    async def iteration(self, number: int) -> IterationResult | None:
        return await self._read(LanceStore.iteration, number)

    async def age_rows(self, before: int | None = None) -> list[AgeRow]:
        return await self._read(LanceStore.age_rows, before)

    async def due_rows(self, due: DueFilter, prune_before: int, prune_below: float) -> list[AgeRow]:
        return await self._read(LanceStore.due_rows, due, prune_before, prune_below)

    async def find_archived(self, ids: Sequence[str]) -> list[ArchivedItem]:
        return await self._read(LanceStore.find_archived, list(ids))

    async def archived_rows(
        self, before: int | None = None, below: float | None = None
    ) -> list[ArchivedItem]:
        return await self._read(LanceStore.archived_rows, before, below)

    async def forgettable(self, selection: ForgetSelection) -> Forgettable:
        """The items and iteration records a forget call selects (see ``forgetting``)."""
        return await self._read(LanceStore.forgettable, selection)

    async def missing_vectors(self, limit: int) -> list[ContextItem]:
        return await self._read(LanceStore.missing_vectors, limit)

    async def size_bytes(self) -> int:
        return await self._read(LanceStore.size_bytes)

    async def _read(self, method: Callable[..., T], *args: Any, contain: bool = True) -> T:
        """``method(store, *args)`` in a worker thread, now, within ``timeout``.

        The store is the one open at the call (a restart opens a new one; a read in flight
        finishes on the old). A failure of the data (``contain``) or of the store itself is a
        ``StoreError`` for this caller: a read changes nothing, so there is nothing for a
        restart to repair.

        Raises:
            ActorUnavailable: The actor is not serving, or the read took too long.
            StoreError: The store could not answer this read.
        """
        store = self._store
        state = self.health.state
        if store is None or state is not ActorState.RUNNING:
            raise self.unavailable()
        try:
            with anyio.fail_after(self.timeout):
                return await anyio.to_thread.run_sync(
                    method, store, *args, limiter=self._readers, abandon_on_cancel=True
                )
        except TimeoutError as exc:
            raise ActorUnavailable(f"{self.name} did not answer within {self.timeout:g}s") from exc
        except RalphContextError:
            raise
        except Exception as exc:
            if not contain:
                raise
            log.warning("read_failed", read=method.__name__, error=f"{type(exc).__name__}: {exc}")
            raise StoreError(f"the store could not answer ({type(exc).__name__}: {exc})") from exc
