"""Storage actor: the only writer of the LanceDB store, and the gate to its readers.

Writes go through the inbox, one at a time. Being the single writer lets it batch: appends
queued together become one table write (one version), and access counts are flushed in one
update (500 single-row updates made searches 10x slower until compaction). After
``optimize_every_writes`` writes it compacts the tables, appends served beside it.

Reads do not queue behind writes: LanceDB serves each read from the latest committed
version, so reads run at once in worker threads (at most ``_READERS``) and see every write
whose call has returned. Requests are in ``requests``, the callers' helpers in
``writes`` (through the inbox, or to another replica: ``forward``) and
``reads`` (at once); when a maintenance is due, and running it, in
``upkeep``.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import anyio

from ralph_context._logging import get_logger
from ralph_context.actors.storage.beside import maintain_beside_appends
from ralph_context.actors.storage.group import (
    Crowding,
    answer_items,
    group_runs,
    item_pairs,
    keyed_entries,
)
from ralph_context.actors.storage.reads import StorageReads
from ralph_context.actors.storage.reopen import StorageReopen
from ralph_context.actors.storage.requests import (
    AddItems,
    AddIteration,
    AddKeyed,
    Adjacent,
    AdjustUsefulness,
    ArchiveItems,
    DeleteItems,
    EndForget,
    FlushUsage,
    Forget,
    InPacks,
    Maintain,
    MaintainIfDue,
    Prune,
    PutRequestKey,
    RepairVectorIndex,
    Rewrite,
    SetState,
    SetVectors,
    StorageRequest,
    SummarizeItems,
    TextHit,
    Unbury,
    VectorHit,
)
from ralph_context.actors.storage.unwritable import WriteFault
from ralph_context.config import StorageSettings
from ralph_context.errors import (
    ModelMismatch,
    RalphContextError,
    StoreDamaged,
    StoreError,
    StoreLocked,
)
from ralph_context.object_location import Location
from ralph_context.runtime import Envelope, Foreground, PermanentFailure
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.lifecycle.tombstones import KEY
from ralph_context.storage.maintenance.upkeep_worker import worker
from ralph_context.storage.store.rewrite import rewrite_rows
from ralph_context.storage.table.requests import Claim

# The requests and hits callers use are also importable from here.
__all__ = ["AddItems", "Adjacent", "FlushUsage", "StorageActor", "TextHit", "VectorHit"]

log = get_logger("ralph_context.storage")

T = TypeVar("T")

# Reads at once (each in a worker thread; LanceDB's pool keeps both cores busy with a few).
_READERS = 8


class StorageActor(StorageReads, StorageReopen):
    """Serves the store: write helpers wrap :meth:`call` (one at a time, in order), read
    helpers run at once beside them (see the module's docstring).

    Every helper raises ``ActorUnavailable`` when the actor is down, restarting or slower than
    ``timeout``, and ``StoreError`` when the store refuses the data in a request; a write
    raises ``StoreUnwritable`` while the disk refuses writes (``unwritable``).

    Args:
        settings: The ``storage`` section.
        location: Store folder or object-storage location, ``None``: an in-memory store.
        model: ``(model_id, dimension)`` of the loaded embedding model, if any.
        timeout: Default seconds a helper waits for an answer.
        foreground: The loop's requests in flight: compaction waits until there are none.
        read_only: Open the store without its writer lock, beside another process that
            writes it: reads only; every write request is refused with a ``StoreError``.
    """

    def __init__(
        self,
        settings: StorageSettings,
        location: Location | None,
        model: tuple[str, int] | None,
        *,
        timeout: float = 30.0,
        foreground: Foreground | None = None,
        read_only: bool = False,
        lock_at: Location | None = None,
    ) -> None:
        super().__init__("storage", inbox_size=512, max_batch=256)
        self.lock_at = lock_at
        self.foreground = foreground or Foreground()
        if location is not None and not read_only:  # its upkeep child gives way (give_way)
            self.foreground.on_change = worker().give_way.busy
        self.settings = settings
        self.location = location
        self.model = model
        self.timeout = timeout
        self.read_only = read_only
        self.fatal: RalphContextError | None = None
        self._store: LanceStore | None = None
        # The damaged store's readable view, while the store is served from it.
        self._view: Path | None = None
        self._sealed_at = -math.inf
        self._writes = 0
        self._upkeep_started = False
        self._flushed_at = 0.0
        # Why the last vector search failed, until a repair succeeds (shown by health).
        self.vector_fault: str | None = None
        self._repair_after = 0.0
        self._readers = anyio.CapacityLimiter(_READERS)
        self._crowding = Crowding()
        self.write_fault = WriteFault(location, self.health, self.tell, self._usage_pending)
        self.write_fault.reclaim = self._take_lock

    @property
    def model_id(self) -> str | None:
        """The embedding model the open store's vectors come from (``None`` if not open)."""
        return self._store.model_id if self._store is not None else None

    @property
    def dimension(self) -> int | None:
        """The open store's vector size (``None`` if not open)."""
        return self._store.dimension if self._store is not None else None

    @property
    def without_vector(self) -> int | None:
        """Items stored without a vector, from the store's running counts (``None`` when
        the store is not open or is read beside another writer: counting would read)."""
        if self._store is None or self.read_only:
            return None
        return self._store.without_vector

    @property
    def searched_rows(self) -> int:
        """About how many items a full-text search scores against (1 when not open): the
        scale of a BM25 score (``scoring.lexical_evidence``). A read of running counts."""
        return self._store.searched_rows if self._store is not None else 1

    @property
    def archive_empty(self) -> bool:
        """True while nothing was ever archived (or the store is not open): retrieval then
        skips the archive without a call. A plain read of a flag only this actor sets."""
        return self._store is None or self._store.archive.empty

    def request_target(self, key: str) -> Claim | None:
        """What the first write with idempotency ``key`` produced (an in-memory lookup)."""
        return self.store.requests.get(key) if self._store is not None else None

    def key_forgotten(self, key: str) -> bool:
        """True when a forget dropped idempotency ``key`` with its item (in memory)."""
        if self._store is None:
            return False
        return self.store.tombstones.has_digest(KEY, self.store.requests.digest(key))

    def forgotten_at(self, kind: str, value: str) -> datetime | None:
        """When a forget tombstoned ``value`` as a ``kind`` (``storage.lifecycle.tombstones``), if
        one did: an in-memory lookup (on object storage, the table read again once per
        refresh interval when it changed)."""
        return self.store.tombstones.when(kind, value) if self._store is not None else None

    async def setup(self) -> None:
        try:
            self._store = await anyio.to_thread.run_sync(self._open_store)
            if self._store.lock_owed is not None:  # writes wait for the lock: _take_lock
                self.write_fault.pause(self._store.lock_owed)
        except StoreDamaged as exc:
            self._store = await anyio.to_thread.run_sync(self._open_damaged)
            self.write_fault.stay(exc)  # read-only until repaired and restarted
        except (ModelMismatch, StoreLocked) as exc:
            self.fatal = exc
            raise PermanentFailure(str(exc)) from exc
        except (StoreError, NotADirectoryError, FileExistsError, PermissionError) as exc:
            # An unreadable model record or a path we cannot create: retrying cannot help.
            raise PermanentFailure(f"cannot open the store at {self.location}: {exc}") from exc
        log.info("store_opened", location=str(self.location or "memory"))

    async def teardown(self) -> None:
        if self._store is None:
            return
        if self._store.usage.pending and self._store.locked:
            try:
                await self._flush_usage()
            except Exception as exc:
                # Never mask the crash that brought us here; the counts are lost, say so.
                log.error("usage_flush_failed", pending=self._store.usage.pending, error=str(exc))
        if self._store.locked:  # what the last writes committed gets its checksums
            self._sealed_at = -math.inf
            await self._seal_if_due()
        await self.close_forwarder()
        self._store.close()
        if self._view is not None:  # links only: their targets stay
            shutil.rmtree(self._view, ignore_errors=True)
            self._view = None

    async def handle(self, request: StorageRequest) -> object:
        if self.read_only:
            return self._refuse_write(request)
        if self.write_fault.error is not None and not isinstance(request, InPacks):
            return self.write_fault.refuse(request)  # a pack's function may only read
        match request:
            case FlushUsage():
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
            case Maintain(reclaim, scrub, settle):
                if settle:  # a settling pass keeps old files no append could need
                    return await maintain_beside_appends(
                        self, lambda: self._maintain(settle=True), foreground=self.foreground
                    )
                # A scrub is awaited by its caller: at the writer's priority.
                return await self._maintain(reclaim, scrub, urgent=scrub)
            case MaintainIfDue():
                return None  # the check after the batch runs it
            case RepairVectorIndex():
                return await self._repair_vector_index()
            case SetVectors(vectors):
                self._writes += 1
                return await self._run(self.store.set_vectors, vectors)
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
            case Rewrite(hot, archived):
                self._writes += 2
                return await self._run(rewrite_rows, self.store, hot, archived)
            case Forget(found):
                self._writes += 2
                return await self._run(self.store.begin_forget, found)
            case EndForget():
                return await self._run(self.store.end_forget)
            case Unbury(entries):
                return await self._run(self.store.tombstones.lift_values, entries)
            case InPacks(function):
                return await self._in_packs(function)
            case AddItems(pairs):
                stored = await self._timed(self.store.add_items, pairs)
                self._writes += 1
                return stored
            case AddKeyed(item, vector, key, fingerprint):
                keyed = await self._timed(self.store.add_keyed, item, vector, key, fingerprint)
                self._writes += 2
                return keyed
            case PutRequestKey(key, target, fingerprint):
                await self._run(self.store.put_request_key, key, target, fingerprint)
                self._writes += 1
                return None
        raise StoreError(f"unknown storage request {type(request).__name__}")

    async def handle_batch(self, batch: Sequence[Envelope[StorageRequest, object]]) -> None:
        """Answer in order, each run of consecutive appends in one commit (group);
        then, with every caller answered, run maintenance if it is due."""
        batch = await self._crowding.gather(self, batch)
        for run in group_runs(batch):
            if len(run) > 1 and await self._commit_together(run):
                continue
            for envelope in run:
                try:
                    envelope.resolve(await self.handle(envelope.request))
                except RalphContextError as error:
                    envelope.refuse(error)
                except Exception as error:  # re-raised unless a full disk or bad data
                    envelope.refuse(self.write_fault.refusal(error))
        if not self._upkeep_started and self._maintenance_near():
            self._upkeep_started = True
            await self._run(self.store.prepare_upkeep)
        if any(not isinstance(e.request, Maintain | MaintainIfDue) for e in batch):
            self.changed()
            await self._seal_if_due()
        if self._maintenance_due():
            # Due in flight only when overdue or waited out: then not at the CPU the searches
            # leave over (upkeep_worker.at_normal_priority). Appends run beside (beside).
            urgent = not self.foreground.calm
            self._writes, self._maintaining = 0, True  # from now: no second one is due
            await maintain_beside_appends(
                self, lambda: self._maintain_unasked(urgent), foreground=self.foreground
            )

    async def _commit_together(self, run: Sequence[Envelope[StorageRequest, object]]) -> bool:
        """One commit for a run of appends of several callers; False (nothing answered)
        if the store refused it, so each is then served alone and only a bad one refused."""
        try:
            if isinstance(run[0].request, AddKeyed):
                keyed = await self._timed(self.store.add_keyed_many, keyed_entries(run))
                for envelope, answer in zip(run, keyed, strict=True):
                    if isinstance(answer, RalphContextError):  # this one's key: a value
                        envelope.refuse(answer)
                    else:
                        envelope.resolve(answer)
                self._writes += 2
            else:
                stored = await self._timed(self.store.add_items, item_pairs(run))
                answer_items(run, stored)
                self._writes += 1
        except RalphContextError:  # one of them refused (a forgotten id): each alone, below
            return False
        except Exception as error:
            self.write_fault.refusal(error)  # re-raises a bug; a full disk pauses writes
            return False
        return True

    # --- internals -------------------------------------------------------------------------

    async def _timed(self, function: Callable[..., T], *args: object) -> T:
        """An append's commit, noted for group commit (group.Crowding)."""
        started = anyio.current_time()
        result = await self._run(function, *args)
        self._crowding.committed(anyio.current_time() - started, queued_behind=self.queued > 0)
        return result

    def _usage_pending(self) -> int:
        return self._store.usage.pending if self._store is not None else 0

    async def _flush_usage(self) -> None:
        self._flushed_at = anyio.current_time()
        await self._run(self.store.flush_usage)
        if self.store.shared:
            # Other replicas' feedback and retrievals count here from now on.
            await self._run(self.store.usage.refresh)
