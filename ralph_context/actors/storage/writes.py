"""The storage actor's write helpers: each sends its request through the inbox, where the
writes are served one at a time and in order, and waits for the answer within a deadline;
``record_access`` counts in memory without waiting and queues the flush.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

import anyio

from ralph_context._logging import get_logger
from ralph_context.actors.storage.forward import StorageForward
from ralph_context.actors.storage.requests import (
    AddItems,
    AddIteration,
    AddKeyed,
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
    Rewrite,
    SetState,
    SetVectors,
    StorageRequest,
    SummarizeItems,
    Unbury,
)
from ralph_context.actors.storage.unwritable import WriteFault
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import RalphContextError, StoreError
from ralph_context.models import ContextItem, ContextState, IterationResult
from ralph_context.object_location import Location
from ralph_context.runtime import Actor, ActorState
from ralph_context.storage.lance_store import LanceStore, MaintenanceReport
from ralph_context.storage.store.forget import ForgetBegun
from ralph_context.storage.store.lifecycle import Forgettable
from ralph_context.storage.store.rewrite import Rewritten
from ralph_context.storage.table.pack_space import PackSpace
from ralph_context.storage.write_faults import unwritable

T = TypeVar("T")

log = get_logger("ralph_context.storage")

# Usage counters are served from memory; writing them costs one small upsert, so batch it,
# but not for long: a killed process loses what was not flushed.
_USAGE_FLUSH_AT = 256
_USAGE_FLUSH_EVERY = 30.0  # seconds
# Settling passes per quiet period: the first compacts and drops what the writes left; the
# versions each pass makes itself are the next one's to drop, a retention window later
# (measured: after two, a compaction's old files were still held by one version).
SETTLE_PASSES = 3

# Rows no index covers yet (added or rewritten since the last compaction), as (at most, share
# of the store, at least): maintenance is due at a thousand or a tenth of the store (each
# search scans them, ~6 ms more per 1,000 at 100k items), overdue at 4,000 or half of it.
_UNINDEXED_ROWS = 1_000
_UNINDEXED_DUE, _UNINDEXED_OVERDUE = (_UNINDEXED_ROWS, 10, 20), (4 * _UNINDEXED_ROWS, 2, 100)


class StorageWrites(StorageForward, Actor[StorageRequest, object]):
    """The write helpers of :class:`~ralph_context.actors.storage.actor.StorageActor` (see the
    module's docstring); the state they use is declared here and set by its ``__init__``."""

    _store: LanceStore | None
    timeout: float
    read_only: bool
    _flushed_at: float
    location: Location | None
    write_fault: WriteFault
    # When the store last changed (a write or a maintenance; None: not since it opened),
    # and how many settling passes it is owed (see ``actors.settle``).
    _changed_at: float | None = None
    _settles_owed: int = SETTLE_PASSES

    # True while a maintenance runs (appends are served beside it: beside), and
    # how many requests wait for it to end.
    _maintaining: bool = False
    behind: int = 0
    # Set when a maintenance fell due while the loop was busy (see maintain_when_calm);
    # and once the loop stayed busy for the whole wait, so it runs without calm.
    _wanted: anyio.Event | None = None
    _waited_out: bool = False

    @property
    def write_error(self) -> str | None:
        """Why writes are refused while the disk refuses them (``None``: they are not)."""
        return None if self.write_fault.error is None else str(self.write_fault.error)

    def changed(self, *, settling: bool = False) -> None:
        """Note a change of the store: a write or a maintenance (owed a settling pass
        again), or a settling pass (one fewer owed)."""
        self._changed_at = anyio.current_time()
        self._settles_owed = max(0, self._settles_owed - 1) if settling else SETTLE_PASSES

    def want_maintenance(self) -> None:
        """A maintenance fell due while a request was in flight: wake the task that asks
        for it once the loop is calm (``actors.settle.maintain_when_calm``)."""
        if self._wanted is not None:
            self._wanted.set()

    async def maintenance_wanted(self) -> None:
        """Return once a maintenance fell due while the loop was busy (since this call)."""
        self._wanted = anyio.Event()
        await self._wanted.wait()

    def _unindexed_past(self, *, overdue: bool = False) -> bool:
        """Whether the rows no index covers make maintenance due (or ``overdue``). Every
        search reads those rows without an index (a flat full-text pass), so a small store
        pays for a few hundred as a large one does for a thousand. conv-26 over MCP, 201 of
        419 rows unindexed after its ingest: 9 ms of Lance's CPU a search, 4.5 once
        maintained; the 201 stayed until 25 more writes came. A new store filled back to
        back (16 batches) had none of its rows under the full-text index until a pause: a
        search 16.7 ms, 6.4 once maintained. A small store maintains quickly (~25 ms at 419
        items, ~120 at 5k)."""
        at_most, share, at_least = _UNINDEXED_OVERDUE if overdue else _UNINDEXED_DUE
        unindexed, rows = self.store.unindexed_rows, self.store.searched_rows
        return unindexed >= min(at_most, max(at_least, rows // share))

    def _unindexed_near(self) -> bool:
        """Half-way to the thousand unindexed rows that make maintenance due at any size."""
        return 2 * self.store.unindexed_rows >= _UNINDEXED_ROWS

    def maintain_if_due(self, *, waited_out: bool = False) -> bool:
        """Queue the check that runs a due maintenance if the loop is calm, or whatever the
        loop does if ``waited_out`` (it stayed busy for the whole wait: a steady stream of
        searches would otherwise pay for the fragments for as long as it lasts). False:
        the inbox is full, so a request is about to run the check anyway."""
        self._waited_out = self._waited_out or waited_out
        return self.tell(MaintainIfDue())

    def settle_due(self, retention_seconds: float) -> bool:
        """Whether a settling pass is owed and the store has not changed for the whole
        retention window (every version it has, but the latest, is past it)."""
        if self._store is None or self.read_only or not self._settles_owed:
            return False
        if self.write_fault.error is not None:
            return False  # nothing can be written; the probes resume writes first
        if self._changed_at is None:  # opened: what earlier processes left counts from now
            self._changed_at = anyio.current_time()
            return False
        return anyio.current_time() - self._changed_at >= retention_seconds

    async def settle(self) -> MaintenanceReport:
        """Compact, and drop the old versions past the retention window (``settle_due``)."""
        reply = await self.call(Maintain(settle=True), timeout=self.timeout * 10)
        return cast(MaintenanceReport, reply)

    def _refuse_write(self, request: StorageRequest) -> object:
        """What a read-only open answers: nothing to flush or maintain, and no writes."""
        match request:
            case FlushUsage():
                return None
            case Maintain(scrub=False):
                return MaintenanceReport(compacted=False, vector_index_built=False)
        raise StoreError(
            f"the store at {self.location} is open read-only (another process writes it): "
            f"{type(request).__name__} is a write"
        )

    async def add_items(
        self, pairs: Sequence[tuple[ContextItem, Vectors | None]], *, forward: bool = True
    ) -> list[ContextItem]:
        """Store items; returns them as stored (with their place in the store's order).
        A bulk write gets the deadline once per 1,000 items (a loaded box writes 10k items
        in well over 30 s). On a shared store they go to the replica that commits the
        store's writes, unless not ``forward`` (``actors.storage.forward``)."""
        if forward and (forwarded := await self.forward_items(pairs)) is not None:
            return forwarded
        deadline = self.timeout * max(1.0, len(pairs) / 1000)
        reply = await self.call(AddItems(tuple(pairs)), timeout=deadline)
        return cast(list[ContextItem], reply)

    def record_access(self, ids: Sequence[str]) -> bool:
        """Count a retrieval of ``ids`` without waiting: the counters are in memory (a dict
        update, here on the event loop), so any later read sees them; writing them to the
        table is queued once enough are pending or they are old. False when the store is
        not serving."""
        store = self._store
        if store is None or self.health.state is not ActorState.RUNNING:
            return False
        store.record_access(ids, datetime.now(UTC))
        if self.read_only or self.write_fault.error is not None:
            # Counted for this process's reads; never written (read-only), or written once
            # writes resume (unwritable).
            return True
        pending = store.usage.pending
        stale = anyio.current_time() - self._flushed_at > _USAGE_FLUSH_EVERY
        if pending >= _USAGE_FLUSH_AT or (pending and stale):
            # The next flush resets the clock; until then, do not queue one per retrieval.
            self._flushed_at = anyio.current_time()
            self.tell(FlushUsage())
        return True

    async def adjust_usefulness(self, item_id: str, delta: float) -> float:
        reply = await self.call(AdjustUsefulness(item_id, delta), timeout=self.timeout)
        return cast(float, reply)

    async def add_keyed(
        self,
        item: ContextItem,
        vector: Vectors | None,
        key: str,
        fingerprint: str | None,
        *,
        forward: bool = True,
    ) -> tuple[ContextItem, bool]:
        """Store ``item`` unless idempotency ``key`` was used before (see ``requests``):
        the stored item, and whether it was written by this call. Forwarded as
        :meth:`add_items` is.

        Raises:
            IdempotencyConflict: ``key`` was used by a request with other arguments.
        """
        if forward and (forwarded := await self.forward_keyed(item, vector, key, fingerprint)):
            return forwarded
        reply = await self.call(AddKeyed(item, vector, key, fingerprint), timeout=self.timeout)
        return cast(tuple[ContextItem, bool], reply)

    async def put_request_key(self, key: str, target: str, fingerprint: str | None) -> None:
        """Claim ``key`` for ``target``.

        Raises:
            IdempotencyConflict: Another replica claimed it for a request with other
                arguments.
        """
        await self.call(PutRequestKey(key, target, fingerprint), timeout=self.timeout)

    async def delete_items(self, ids: Sequence[str]) -> int:
        return cast(int, await self.call(DeleteItems(tuple(ids)), timeout=self.timeout))

    async def add_iteration(self, result: IterationResult) -> None:
        await self.call(AddIteration(result), timeout=self.timeout)

    async def maintain(self, *, reclaim: bool = False) -> MaintenanceReport:
        reply = await self.call(Maintain(reclaim), timeout=self.timeout * 10)
        return cast(MaintenanceReport, reply)

    async def scrub(self) -> MaintenanceReport:
        """Rewrite the store's files so that rows deleted or rewritten before this call
        are on no file of it, then drop the old versions (``LanceStore.scrub``; what a
        forget and a redaction end with). Queued behind the writes sent before it.

        Raises:
            ActorUnavailable: The store is down or took over ten times the deadline.
            StoreError: The store is open read-only.
        """
        reply = await self.call(Maintain(reclaim=True, scrub=True), timeout=self.timeout * 10)
        return cast(MaintenanceReport, reply)

    async def set_state(self, ids: Sequence[str], state: ContextState) -> None:
        await self.call(SetState(tuple(ids), state), timeout=self.timeout)

    async def summarize_items(self, summaries: dict[str, str]) -> int:
        return cast(int, await self.call(SummarizeItems(summaries), timeout=self.timeout))

    async def archive_items(self, ids: Sequence[str]) -> int:
        return cast(int, await self.call(ArchiveItems(tuple(ids)), timeout=self.timeout))

    async def prune(self, hot: Sequence[str], archived: Sequence[str]) -> int:
        reply = await self.call(Prune(tuple(hot), tuple(archived)), timeout=self.timeout)
        return cast(int, reply)

    async def forget(self, found: Forgettable) -> ForgetBegun:
        """Forget what a selection picked, but for the scrub (``LanceStore.begin_forget``:
        an unfinished forget's plan first, then this one's written, its tombstones, deletes,
        keys and iteration records); the caller scrubs, then calls :meth:`end_forget`."""
        reply = await self.call(Forget(found), timeout=self.timeout * 10)
        return cast(ForgetBegun, reply)

    async def end_forget(self) -> None:
        """The forget's scrub is done: its plan goes (``LanceStore.end_forget``)."""
        await self.call(EndForget(), timeout=self.timeout)

    async def unbury(self, entries: Sequence[tuple[str, str]]) -> None:
        """Lift the tombstones of ``(kind, value)`` pairs (``Tombstones.lift_values``): an
        import told to bring them back."""
        await self.call(Unbury(tuple(entries)), timeout=self.timeout)

    async def set_vectors(self, vectors: dict[str, Vectors]) -> int:
        return cast(int, await self.call(SetVectors(vectors), timeout=self.timeout))

    async def rewrite(
        self, hot: Sequence[tuple[ContextItem, Vectors | None]], archived: Sequence[Rewritten]
    ) -> int:
        """Rewrite rows in place (``storage/store/rewrite.py``); returns rows written."""
        reply = await self.call(Rewrite(tuple(hot), tuple(archived)), timeout=self.timeout * 10)
        return cast(int, reply)

    async def in_packs(self, function: Callable[[PackSpace], T]) -> T:
        return cast(T, await self.call(InPacks(function), timeout=self.timeout))

    # --- the lane's own work (served by StorageActor.handle) ---------------------------

    vector_fault: str | None

    @property
    def store(self) -> LanceStore:
        assert self._store is not None, "setup() opens the store"
        return self._store

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(function, *args)

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
            if unwritable(exc, self.location) is not None:
                raise self.write_fault.check(exc) from exc
            log.error("pack_request_failed", error=f"{type(exc).__name__}: {exc}")
            raise StoreError(
                f"the store refused the request ({type(exc).__name__}: {exc})"
            ) from exc
