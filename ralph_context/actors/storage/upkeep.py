"""The storage actor's own upkeep: whether a maintenance is due (by writes, by rows no
index covers, by the loop's calm) and running it in the writer's lane, appends served
beside it (``beside``); on object storage only the lease holder maintains
(``storage.replicas.lease``)."""

from __future__ import annotations

import anyio

from ralph_context.actors.storage.writes import StorageWrites
from ralph_context.config import StorageSettings
from ralph_context.runtime import Foreground
from ralph_context.storage.lance_store import MaintenanceReport
from ralph_context.storage.maintenance.upkeep_worker import at_normal_priority, hurried_when

__all__ = ["StorageUpkeep"]

# Compaction runs even with requests in flight once this many cadences of writes are due.
_OVERDUE = 4


class StorageUpkeep(StorageWrites):
    """Maintenance of :class:`~ralph_context.actors.storage.actor.StorageActor`'s store; the
    state it uses is declared here and set by that class's ``__init__``."""

    settings: StorageSettings
    foreground: Foreground
    _writes: int

    async def may_maintain(self) -> bool:
        """True unless the store is on object storage and another replica holds its
        maintenance lease (taken or renewed by asking; see ``storage.replicas.lease``)."""
        if self.read_only:
            return False
        if self._store is None or self._store.lease is None:
            return True
        return await anyio.to_thread.run_sync(self._store.may_maintain)

    def _maintenance_due(self) -> bool:
        """Due after ``optimize_every_writes`` writes (or an index to build), once no request
        is in flight: compaction takes ~0.3 s of both cores at 100k items. Past four times
        the cadence (or unindexed rows) it runs regardless: fragments slow every read."""
        waited_out, self._waited_out = self._waited_out, False  # for this one check only
        paused = self.write_fault.error is not None
        if self._store is None or self.read_only or self._maintaining or paused:
            return False
        cadence = self.settings.optimize_every_writes
        if self._writes >= _OVERDUE * cadence or self._unindexed_past(overdue=True):
            return True
        due = self._writes >= cadence or self._unindexed_past() or self.store.index_due()
        if due and not self.foreground.calm and not waited_out:
            self.want_maintenance()  # asked again once calm or waited out (settle.py)
        return due and (self.foreground.calm or waited_out)

    def _maintenance_near(self) -> bool:
        """Half-way to the first maintenance: time to start the process it runs in."""
        if self._store is None or self.read_only:
            return False
        return 2 * self._writes >= self.settings.optimize_every_writes or self._unindexed_near()

    async def _maintain(
        self,
        reclaim: bool = False,
        scrub: bool = False,
        *,
        urgent: bool = False,
        settle: bool = False,
    ) -> MaintenanceReport:
        self._writes = 0
        self._flushed_at = anyio.current_time()
        self._maintaining = True

        def maintain() -> MaintenanceReport:
            # Requests waiting for a calm maintenance hurry the rest of it (appends do not
            # wait: they are served beside it).
            hurry = hurried_when(
                lambda: self.queued > 0 or self.behind > 0, waited_on=lambda: self.behind > 0
            )
            with at_normal_priority() if urgent else hurry:
                if scrub:
                    return self.store.scrub()
                return self.store.maintain(reclaim=reclaim, settle=settle)

        try:
            return await self._run(maintain)
        finally:
            self._maintaining = False
            # From its end: the versions it made are as old as that.
            self.changed(settling=settle)

    async def _maintain_unasked(self, urgent: bool) -> MaintenanceReport:
        """A maintenance that fell due: a full disk pauses writes (the requests kept for
        after it are then refused with the cause); anything else crashes, as before."""
        try:
            return await self._maintain(urgent=urgent)
        except Exception as error:
            self.write_fault.check(error)
            return MaintenanceReport(compacted=False, vector_index_built=False)
