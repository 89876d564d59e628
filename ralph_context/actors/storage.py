"""Storage actor: the only writer of the LanceDB store.

Being the single writer lets it batch: every ``AddItems`` queued at the same moment becomes one
table write (one version), and access counts from retrievals are accumulated in memory and
flushed in one update, since 500 single-row updates made searches 10x slower until compaction.
After ``optimize_every_writes`` writes it compacts the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import structlog

from ralph_context.config import StorageSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import ModelMismatch, RalphContextError, StoreError
from ralph_context.models import ContextItem, ContextState, IterationResult
from ralph_context.runtime import Actor, Envelope, PermanentFailure
from ralph_context.storage import threads
from ralph_context.storage.archive import ArchivedItem
from ralph_context.storage.filters import ItemFilter
from ralph_context.storage.lance_store import AgeRow, LanceStore, MaintenanceReport, StoreStats
from ralph_context.storage.pack_space import PackSpace

__all__ = [
    "AddItems",
    "AddIteration",
    "Adjacent",
    "AdjustUsefulness",
    "ArchiveSearch",
    "DeleteItems",
    "GetItems",
    "HybridSearch",
    "InPacks",
    "LatestIteration",
    "ListItems",
    "Maintain",
    "MissingVectors",
    "Neighbours",
    "RecentIterations",
    "RecordAccess",
    "RepairVectorIndex",
    "SetVectors",
    "Stats",
    "StorageActor",
    "TextSearch",
]

log = structlog.get_logger("ralph_context.storage")

T = TypeVar("T")
VectorHit = tuple[ContextItem, float, Vectors]
TextHit = tuple[ContextItem, float, Vectors | None]
Adjacent = tuple[ContextItem, Vectors | None]

# Usage counters are served from memory; writing them costs one small upsert, so batch it,
# but not for long: a killed process loses what was not flushed.
_USAGE_FLUSH_AT = 256
_USAGE_FLUSH_EVERY = 30.0  # seconds
# A damaged vector index is rebuilt at most this often (seconds): a rebuild that keeps failing
# must not turn every query into a full retraining.
_REPAIR_EVERY = 60.0

# Errors the store raises for the data in a request (bad text or types), not for a lost
# resource: the request is refused and the actor keeps serving.
_REQUEST_ERRORS = (ValueError, TypeError, UnicodeError)


@dataclass(frozen=True)
class AddItems:
    pairs: tuple[tuple[ContextItem, Vectors | None], ...]


@dataclass(frozen=True)
class GetItems:
    ids: tuple[str, ...]


@dataclass(frozen=True)
class ListItems:
    where: ItemFilter
    limit: int


@dataclass(frozen=True)
class TextSearch:
    text: str
    limit: int
    where: ItemFilter


@dataclass(frozen=True)
class HybridSearch:
    """Vector and full-text search for the same query, run side by side; the neighbours of
    the best ``seeds`` full-text hits are fetched as soon as that half answers, while the
    (slower) vector half still runs."""

    vector: Vectors
    text: str
    vector_limit: int
    text_limit: int
    where: ItemFilter
    seeds: int = 0


@dataclass(frozen=True)
class Neighbours:
    """Items stored right before and after these (same source and iteration)."""

    items: tuple[ContextItem, ...]
    where: ItemFilter


@dataclass(frozen=True)
class ArchiveSearch:
    """Archived items nearest to a query vector."""

    vector: Vectors
    limit: int
    where: ItemFilter


@dataclass(frozen=True)
class RecordAccess:
    ids: tuple[str, ...]


@dataclass(frozen=True)
class AdjustUsefulness:
    item_id: str
    delta: float


@dataclass(frozen=True)
class DeleteItems:
    ids: tuple[str, ...]


@dataclass(frozen=True)
class AddIteration:
    result: IterationResult


@dataclass(frozen=True)
class RecentIterations:
    last_n: int


@dataclass(frozen=True)
class Stats:
    pass


@dataclass(frozen=True)
class LatestIteration:
    pass


@dataclass(frozen=True)
class Maintain:
    reclaim: bool = False


@dataclass(frozen=True)
class GetIteration:
    number: int


@dataclass(frozen=True)
class AgeRows:
    pass


@dataclass(frozen=True)
class SetState:
    ids: tuple[str, ...]
    state: ContextState


@dataclass(frozen=True)
class SummarizeItems:
    summaries: dict[str, str]


@dataclass(frozen=True)
class ArchiveItems:
    ids: tuple[str, ...]


@dataclass(frozen=True)
class FindArchived:
    ids: tuple[str, ...]


@dataclass(frozen=True)
class ArchivedRows:
    pass


@dataclass(frozen=True)
class Prune:
    hot: tuple[str, ...]
    archived: tuple[str, ...]


@dataclass(frozen=True)
class MissingVectors:
    limit: int


@dataclass(frozen=True)
class SetVectors:
    vectors: dict[str, Vectors]


@dataclass(frozen=True)
class RepairVectorIndex:
    """Retrain the vector index after a vector search failed on it (damaged files)."""


@dataclass(frozen=True)
class SizeBytes:
    pass


@dataclass(frozen=True)
class InPacks:
    """Run a tool pack's blocking function on its tables (see ``storage/pack_space.py``)."""

    function: Callable[[PackSpace], object]


StorageRequest = (
    AddItems
    | GetItems
    | ListItems
    | TextSearch
    | HybridSearch
    | Neighbours
    | ArchiveSearch
    | RecordAccess
    | AdjustUsefulness
    | DeleteItems
    | AddIteration
    | RecentIterations
    | Stats
    | LatestIteration
    | Maintain
    | AgeRows
    | GetIteration
    | SetState
    | SummarizeItems
    | ArchiveItems
    | FindArchived
    | ArchivedRows
    | Prune
    | RepairVectorIndex
    | MissingVectors
    | SetVectors
    | SizeBytes
    | InPacks
)


class StorageActor(Actor[StorageRequest, object]):
    """Serves the store; typed helpers below wrap :meth:`call` for each request.

    Every helper raises ``ActorUnavailable`` when the actor is down, restarting or slower than
    ``timeout``, and ``StoreError`` when the store refuses the data in a request.

    Args:
        settings: The ``storage`` section.
        location: Store directory, or ``None`` for an in-memory store.
        model: ``(model_id, dimension)`` of the loaded embedding model, if any.
        timeout: Default seconds a helper waits for an answer.
    """

    def __init__(
        self,
        settings: StorageSettings,
        location: Path | None,
        model: tuple[str, int] | None,
        *,
        timeout: float = 30.0,
    ) -> None:
        super().__init__("storage", inbox_size=512, max_batch=256)
        self.settings = settings
        self.location = location
        self.model = model
        self.timeout = timeout
        self.fatal: RalphContextError | None = None
        self._store: LanceStore | None = None
        self._writes = 0
        self._flushed_at = 0.0
        # Why the last vector search failed, until a repair succeeds (shown by health).
        self.vector_fault: str | None = None
        self._repair_after = 0.0

    @property
    def model_id(self) -> str | None:
        """The embedding model the open store's vectors come from (``None`` if not open)."""
        return self._store.model_id if self._store is not None else None

    @property
    def archive_empty(self) -> bool:
        """True while nothing was ever archived (or the store is not open): retrieval then
        skips the archive without a call. A plain read of a flag only this actor sets."""
        return self._store is None or self._store.archive.empty

    @property
    def store(self) -> LanceStore:
        assert self._store is not None, "setup() opens the store"
        return self._store

    async def setup(self) -> None:
        model_id, dimension = self.model if self.model else (None, None)
        try:
            self._store = await anyio.to_thread.run_sync(
                lambda: LanceStore(
                    self.location,
                    model_id=model_id,
                    dimension=dimension,
                    vector_index_min_rows=self.settings.vector_index_min_rows,
                    version_retention=timedelta(minutes=self.settings.version_retention_minutes),
                )
            )
        except ModelMismatch as exc:
            self.fatal = exc
            raise PermanentFailure(str(exc)) from exc
        except (StoreError, NotADirectoryError, FileExistsError, PermissionError) as exc:
            # An unreadable model record or a path we cannot create: retrying cannot help.
            raise PermanentFailure(f"cannot open the store at {self.location}: {exc}") from exc
        log.info("store_opened", location=str(self.location or "memory"))

    async def teardown(self) -> None:
        if self._store is not None and self._store.usage.pending:
            try:
                await self._flush_usage()
            except Exception as exc:
                # Never mask the crash that brought us here; the counts are lost, say so.
                log.error("usage_flush_failed", pending=self._store.usage.pending, error=str(exc))

    async def handle(self, request: StorageRequest) -> object:
        match request:
            case GetItems(ids):
                return await self._run(self.store.get_items, list(ids))
            case ListItems(where, limit):
                return await self._run(self.store.list_items, where, limit)
            case TextSearch(text, limit, where):
                return await self._run(self.store.text_search, text, limit, where)
            case HybridSearch(vector, text, vector_limit, text_limit, where, seeds):
                return await self._hybrid(vector, text, vector_limit, text_limit, where, seeds)
            case ArchiveSearch(vector, limit, where):
                return await self._run(self.store.archive_search, vector, limit, where)
            case Neighbours(items, where):
                return await self._run(self.store.neighbours, list(items), where)
            case RecordAccess(ids):
                # A dict update: cheap enough for the event loop, and the actor is the only
                # user of the store, so no worker thread touches it meanwhile.
                self.store.record_access(ids, datetime.now(UTC))
                usage = self.store.usage.pending
                stale = anyio.current_time() - self._flushed_at > _USAGE_FLUSH_EVERY
                if usage >= _USAGE_FLUSH_AT or (usage and stale):
                    await self._flush_usage()
                return None
            case AdjustUsefulness(item_id, delta):
                return await self._run(self.store.adjust_usefulness, item_id, delta)
            case DeleteItems(ids):
                deleted = await self._run(self.store.delete_items, ids)
                self._writes += 1
                return deleted
            case AddIteration(result):
                await self._run(self.store.add_iteration, result)
                self._writes += 1
                return None
            case RecentIterations(last_n):
                return await self._run(self.store.recent_iterations, last_n)
            case Stats():
                return await self._run(self.store.stats)
            case LatestIteration():
                return await self._run(self.store.latest_iteration)
            case Maintain(reclaim):
                return await self._maintain(reclaim=reclaim)
            case RepairVectorIndex():
                return await self._repair_vector_index()
            case MissingVectors(limit):
                return await self._run(self.store.missing_vectors, limit)
            case SetVectors(vectors):
                self._writes += 1
                return await self._run(self.store.set_vectors, vectors)
            case GetIteration(number):
                return await self._run(self.store.iteration, number)
            case AgeRows():
                return await self._run(self.store.age_rows)
            case FindArchived(ids):
                return await self._run(self.store.find_archived, list(ids))
            case ArchivedRows():
                return await self._run(self.store.archived_rows)
            case SizeBytes():
                return await self._run(self.store.size_bytes)
            case SetState(ids, state):
                self._writes += 1
                return await self._run(self.store.set_state, list(ids), state)
            case SummarizeItems(summaries):
                self._writes += 2
                return await self._run(self.store.summarize_items, summaries, datetime.now(UTC))
            case ArchiveItems(ids):
                self._writes += 2
                return await self._run(self.store.archive_items, list(ids), datetime.now(UTC))
            case Prune(hot, archived):
                self._writes += 2
                return await self._run(self.store.prune, list(hot), list(archived))
            case InPacks(function):
                return await self._in_packs(function)
            case AddItems(pairs):
                stored = await self._run(self.store.add_items, pairs)
                self._writes += 1
                return stored
        raise StoreError(f"unknown storage request {type(request).__name__}")

    async def handle_batch(self, batch: Sequence[Envelope[StorageRequest, object]]) -> None:
        """Answer in order, merging each run of consecutive ``AddItems`` into one write; then,
        with every caller answered, run maintenance if it is due."""
        index = 0
        while index < len(batch):
            run = index
            while run < len(batch) and isinstance(batch[run].request, AddItems):
                run += 1
            if run - index > 1 and await self._add_together(batch[index:run]):
                index = run
                continue
            envelope = batch[index]
            try:
                envelope.resolve(await self.handle(envelope.request))
            except RalphContextError as error:
                envelope.refuse(error)
            except _REQUEST_ERRORS as error:
                envelope.refuse(StoreError(f"the store rejected the request: {error}"))
            index += 1
        if self._maintenance_due():
            await self._maintain()

    async def _add_together(self, adds: Sequence[Envelope[StorageRequest, object]]) -> bool:
        """One write for several callers; False (nothing written) if the data was refused,
        so each caller is then served alone and only the bad one is refused."""
        pairs = [p for e in adds for p in cast(AddItems, e.request).pairs]
        try:
            stored = await self._run(self.store.add_items, pairs)
        except _REQUEST_ERRORS:
            return False
        self._writes += 1
        start = 0
        for envelope in adds:
            count = len(cast(AddItems, envelope.request).pairs)
            envelope.resolve(stored[start : start + count])
            start += count
        return True

    # --- typed helpers for callers ---------------------------------------------------------

    async def add_items(
        self, pairs: Sequence[tuple[ContextItem, Vectors | None]]
    ) -> list[ContextItem]:
        """Store items; returns them as stored (with their place in the store's order)."""
        reply = await self.call(AddItems(tuple(pairs)), timeout=self.timeout)
        return cast(list[ContextItem], reply)

    async def get_items(self, ids: Sequence[str]) -> list[ContextItem]:
        return cast(list[ContextItem], await self.call(GetItems(tuple(ids)), timeout=self.timeout))

    async def list_items(self, where: ItemFilter, limit: int) -> list[ContextItem]:
        reply = await self.call(ListItems(where, limit), timeout=self.timeout)
        return cast(list[ContextItem], reply)

    async def text_search(self, text: str, limit: int, where: ItemFilter) -> list[TextHit]:
        reply = await self.call(TextSearch(text, limit, where), timeout=self.timeout)
        return cast(list[TextHit], reply)

    async def hybrid_search(
        self,
        vector: Vectors,
        text: str,
        vector_limit: int,
        text_limit: int,
        where: ItemFilter,
        seeds: int = 0,
    ) -> tuple[list[VectorHit], list[TextHit], list[Adjacent]]:
        """Vector hits, full-text hits, and the neighbours of the best ``seeds`` full-text
        hits, for one query; a failed full-text half (e.g. a query of only stop words or a
        damaged FTS index) yields no text hits and no neighbours, not an error."""
        reply = await self.call(
            HybridSearch(vector, text, vector_limit, text_limit, where, seeds),
            timeout=self.timeout,
        )
        return cast(tuple[list[VectorHit], list[TextHit], list[Adjacent]], reply)

    async def archive_search(
        self, vector: Vectors, limit: int, where: ItemFilter
    ) -> list[VectorHit]:
        """Archived items nearest to ``vector``, best first, with cosine and vector."""
        reply = await self.call(ArchiveSearch(vector, limit, where), timeout=self.timeout)
        return cast(list[VectorHit], reply)

    async def neighbours(
        self, items: Sequence[ContextItem], where: ItemFilter
    ) -> list[tuple[ContextItem, Vectors | None]]:
        """Items adjacent to ``items`` in the store's order with the same source and
        iteration, matching ``where``; ``items`` themselves are not repeated."""
        reply = await self.call(Neighbours(tuple(items), where), timeout=self.timeout)
        return cast(list[tuple[ContextItem, Vectors | None]], reply)

    def record_access(self, ids: Sequence[str]) -> bool:
        """Count a retrieval of ``ids`` without waiting: the answer must not wait on
        bookkeeping (nor on the usage flush it may trigger). The inbox keeps order, so a later
        read through this actor sees the count. False when the actor could not take it."""
        return self.tell(RecordAccess(tuple(ids)))

    async def adjust_usefulness(self, item_id: str, delta: float) -> float:
        reply = await self.call(AdjustUsefulness(item_id, delta), timeout=self.timeout)
        return cast(float, reply)

    async def delete_items(self, ids: Sequence[str]) -> int:
        return cast(int, await self.call(DeleteItems(tuple(ids)), timeout=self.timeout))

    async def add_iteration(self, result: IterationResult) -> None:
        await self.call(AddIteration(result), timeout=self.timeout)

    async def recent_iterations(self, last_n: int) -> list[IterationResult]:
        reply = await self.call(RecentIterations(last_n), timeout=self.timeout)
        return cast(list[IterationResult], reply)

    async def stats(self) -> StoreStats:
        return cast(StoreStats, await self.call(Stats(), timeout=self.timeout))

    async def latest_iteration(self) -> int:
        return cast(int, await self.call(LatestIteration(), timeout=self.timeout))

    async def maintain(self, *, reclaim: bool = False) -> MaintenanceReport:
        reply = await self.call(Maintain(reclaim), timeout=self.timeout * 10)
        return cast(MaintenanceReport, reply)

    async def iteration(self, number: int) -> IterationResult | None:
        reply = await self.call(GetIteration(number), timeout=self.timeout)
        return cast(IterationResult | None, reply)

    async def age_rows(self) -> list[AgeRow]:
        return cast(list[AgeRow], await self.call(AgeRows(), timeout=self.timeout))

    async def set_state(self, ids: Sequence[str], state: ContextState) -> None:
        await self.call(SetState(tuple(ids), state), timeout=self.timeout)

    async def summarize_items(self, summaries: dict[str, str]) -> int:
        return cast(int, await self.call(SummarizeItems(summaries), timeout=self.timeout))

    async def archive_items(self, ids: Sequence[str]) -> int:
        return cast(int, await self.call(ArchiveItems(tuple(ids)), timeout=self.timeout))

    async def find_archived(self, ids: Sequence[str]) -> list[ArchivedItem]:
        reply = await self.call(FindArchived(tuple(ids)), timeout=self.timeout)
        return cast(list[ArchivedItem], reply)

    async def archived_rows(self) -> list[ArchivedItem]:
        return cast(list[ArchivedItem], await self.call(ArchivedRows(), timeout=self.timeout))

    async def prune(self, hot: Sequence[str], archived: Sequence[str]) -> int:
        reply = await self.call(Prune(tuple(hot), tuple(archived)), timeout=self.timeout)
        return cast(int, reply)

    async def missing_vectors(self, limit: int) -> list[ContextItem]:
        return cast(list[ContextItem], await self.call(MissingVectors(limit), timeout=self.timeout))

    async def set_vectors(self, vectors: dict[str, Vectors]) -> int:
        return cast(int, await self.call(SetVectors(vectors), timeout=self.timeout))

    async def size_bytes(self) -> int:
        return cast(int, await self.call(SizeBytes(), timeout=self.timeout))

    async def in_packs(self, function: Callable[[PackSpace], T]) -> T:
        return cast(T, await self.call(InPacks(function), timeout=self.timeout))

    # --- internals -------------------------------------------------------------------------

    async def _hybrid(
        self,
        vector: Vectors,
        text: str,
        vector_limit: int,
        text_limit: int,
        where: ItemFilter,
        seeds: int,
    ) -> tuple[list[VectorHit], list[TextHit], list[Adjacent]]:
        store = self.store
        text_hits: list[TextHit] = []
        adjacent: list[Adjacent] = []

        async def lexical() -> None:
            try:
                text_hits.extend(await self._run(store.text_search, text, text_limit, where))
                threaded = [item for item, _, _ in text_hits if threads.place(item)][:seeds]
                if threaded:
                    adjacent.extend(await self._run(store.neighbours, threaded, where))
            except Exception as exc:
                log.warning("text_half_failed", error=str(exc))

        vector_hits: list[VectorHit] = []
        failure: StoreError | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(lexical)
            try:
                vector_hits = await self._vector(vector, vector_limit, where)
            except StoreError as exc:
                # Raised outside the group: inside, it would arrive wrapped in an
                # ExceptionGroup, which the actor would take for a crash.
                failure = exc
        if failure is not None:
            raise failure
        return vector_hits, text_hits, adjacent

    async def _vector(self, vector: Vectors, limit: int, where: ItemFilter) -> list[VectorHit]:
        """The vector half, with damage contained: a failing index (corrupt or missing files)
        answers a ``StoreError``, so retrieval steps down to full-text search instead of the
        actor crashing on every query, and a rebuild of the index is queued."""
        try:
            return await self._run(self.store.vector_search, vector, limit, where)
        except RalphContextError:
            raise
        except Exception as exc:
            self.vector_fault = f"{type(exc).__name__}: {exc}"
            log.error("vector_search_failed", error=self.vector_fault)
            if anyio.current_time() >= self._repair_after:
                self._repair_after = anyio.current_time() + _REPAIR_EVERY
                self.tell(RepairVectorIndex())
            raise StoreError(f"vector search failed ({self.vector_fault})") from exc

    async def _repair_vector_index(self) -> bool:
        try:
            rebuilt = await self._run(self.store.rebuild_vector_index)
        except Exception as exc:
            log.error("vector_index_repair_failed", error=f"{type(exc).__name__}: {exc}")
            return False
        log.warning("vector_index_repaired", rebuilt=rebuilt)
        self.vector_fault = None
        return True

    async def _in_packs(self, function: Callable[[PackSpace], object]) -> object:
        """A pack's function, with its bugs contained: anything but our own typed errors is
        refused as a ``StoreError`` instead of restarting the actor every context tool
        depends on."""
        try:
            return await self._run(function, self.store.packs)
        except RalphContextError:
            raise
        except Exception as exc:
            log.error("pack_request_failed", error=f"{type(exc).__name__}: {exc}")
            raise StoreError(
                f"the store refused the request ({type(exc).__name__}: {exc})"
            ) from exc

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(function, *args)

    def _maintenance_due(self) -> bool:
        if self._store is None:
            return False
        return self._writes >= self.settings.optimize_every_writes or self.store.index_due()

    async def _maintain(self, *, reclaim: bool = False) -> MaintenanceReport:
        self._writes = 0
        self._flushed_at = anyio.current_time()
        return await self._run(lambda: self.store.maintain(reclaim=reclaim))

    async def _flush_usage(self) -> None:
        self._flushed_at = anyio.current_time()
        await self._run(self.store.flush_usage)
