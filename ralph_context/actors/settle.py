"""The settling pass: a store that stopped changing gets its space back.

Every write leaves a version of the table behind, and a version's files stay until
cleanup drops it; cleanup keeps the versions younger than ``storage.version_retention_
minutes`` (readers may still be on them) and runs with maintenance, which runs with
writes. So the versions of the last writes before a store goes quiet were never cleaned:
LoCoMo dev stored one turn per call left 110 MB where the same turns in batches take 5 MB,
and a writer that reopened it did not shrink it either.

This task looks every so often (half the retention window, between 1 s and a minute);
once the store has not changed for the whole window since its last change (a write or a
maintenance) and the loop is calm, it asks the storage actor for a maintenance that
compacts and drops every version past the window; the next passes, a window apart, drop
the versions the one before made: the store ends where a batched store would (300
one-by-one writes: 1.01x). Three passes per quiet period; an open store counts as changed
at open, so what an earlier process left goes too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio

from ralph_context._logging import get_logger
from ralph_context.runtime import Foreground, Supervisor

__all__ = ["keep_upkeep", "maintain_when_calm", "settle_store"]

log = get_logger("ralph_context.storage")


class Settling(Protocol):
    def settle_due(self, retention_seconds: float) -> bool: ...

    async def settle(self) -> object: ...


class Deferring(Protocol):
    async def maintenance_wanted(self) -> None: ...

    def maintain_if_due(self, *, waited_out: bool = False) -> bool: ...


async def settle_store(
    storage: Settling, retention_seconds: float, calm: Callable[[], bool]
) -> None:
    """Run settling passes until cancelled (the engine's lifetime); never raises."""
    interval = min(60.0, max(1.0, retention_seconds / 2))
    while True:
        await anyio.sleep(interval)
        try:
            if calm() and storage.settle_due(retention_seconds):
                await storage.settle()
                log.info("store_settled")
        except Exception as exc:  # a background task must not take the engine down
            log.warning("settle_failed", error=f"{type(exc).__name__}: {exc}")


async def maintain_when_calm(storage: Deferring, quiet: Callable[[], Awaitable[bool]]) -> None:
    """Ask for the maintenance that fell due during a request, once the loop is calm, or
    once a steady stream of requests has kept it busy for the whole wait.

    The writer checks whether maintenance is due right after a write, while that write's
    caller is still in flight, so the check alone never finds the loop calm: maintenance
    then waited for the overdue mark (four cadences), while each one-row fragment made
    every search slower (measured at 100k: 100 fragments, searches 8-10 ms slower). Writes
    are what reaches that mark: a stream of searches right after an ingest (a client asking
    back to back) paid for the ingest's fragments until it paused, 18 ms a search on a
    419-item store against 11 once maintained. Runs until cancelled (the engine's
    lifetime); ``quiet`` returns True once no request has been in flight for a moment,
    False after its bound.
    """
    while True:
        await storage.maintenance_wanted()
        calm = await quiet()
        storage.maintain_if_due(waited_out=not calm)


class Upkept(Settling, Deferring, Protocol):
    @property
    def write_fault(self) -> Recovering: ...


class Recovering(Protocol):
    async def recover(self) -> None: ...


def keep_upkeep(
    supervisor: Supervisor,
    storage: Upkept,
    retention_seconds: float,
    foreground: Foreground,
    calm_at_most: float,
) -> None:
    """Run a writable store's upkeep beside the engine, in ``supervisor``'s background
    tasks: the settling passes (when the loop is calm), the maintenance that fell due while
    it was busy (once it is quiet, or after ``calm_at_most`` seconds), and the probe that
    resumes writes a full or unwritable disk refused (``actors.storage.unwritable``)."""
    supervisor.background(
        lambda: settle_store(storage, retention_seconds, lambda: foreground.calm), name="settle"
    )
    supervisor.background(
        lambda: maintain_when_calm(storage, lambda: foreground.quiet(at_most=calm_at_most)),
        name="maintain-when-calm",
    )
    supervisor.background(storage.write_fault.recover, name="write-probe")
