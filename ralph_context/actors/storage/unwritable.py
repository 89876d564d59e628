"""Read-only while the disk refuses writes, and writable again by itself.

A write that fails for space, permissions or I/O (``storage.write_faults``) used to crash
the storage actor: while it restarted nothing was readable (0 of 10 items found on a full
20 MB disk, search on tier ``none``), the lifecycle and the usage flushes crashed it again
with no client writing, health said healthy between crashes, and a client saw only
``storage could not serve the request``. The files already written stay readable, so
instead the request that failed is refused with its cause (``store is full: No space left
on device at <store>``) and the store turns read-only: reads and searches go on, every
write is refused at once with the same cause, the actor's health says ``read-only``.
Background work waits: usage counts stay in memory, maintenance and settling are not due,
a lifecycle pass refuses to start. Meanwhile a small file is written to the store's folder
now and then (0.2 s after the failure, doubling to every 10 s); once the disk takes it,
writes resume, the counts are flushed and whoever asked to be told is (the engine queues
the lifecycle pass it put off). A refused write was never acknowledged, and one written
before is on disk: nothing acknowledged is lost.

A store opened while its disk refused the writer lock's file (a read-only mount, an
immutable folder) starts paused the same way, owing the lock: a server started so once
wrote unlocked as soon as the disk took writes, beside a CLI the lock then admitted, and
two items got one thread sequence. Once a probe passes, the store is opened again holding
the lock (its running state read after anyone else's commits) before writes resume; if
another process took the lock meanwhile, writes stay refused, naming it, until restart.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pyarrow as pa

from ralph_context._logging import get_logger
from ralph_context.actors.storage.requests import FlushUsage, RepairVectorIndex, StorageRequest
from ralph_context.errors import RalphContextError, StoreError, StoreUnwritable
from ralph_context.object_location import Location
from ralph_context.runtime import Health
from ralph_context.storage.write_faults import probe, unwritable

__all__ = ["READ_ONLY", "WriteFault"]

log = get_logger("ralph_context.storage")

# What the actor's health says it is missing meanwhile.
READ_ONLY = "read-only"
# Seconds before the first probe (a moment's shortage), and the longest between two.
FIRST_PROBE = 0.2
LAST_PROBE = 10.0
# A store writable this long since it last resumed starts its next outage's probes at the
# first delay again; one that fails again sooner goes on from where its probes were.
_STEADY = 60.0

# Errors the store raises for the data in a request (bad text or types, a number too large
# for its column: pyarrow raises OverflowError), not for a lost resource: the request is
# refused and the actor keeps serving. Five such numbers once took the actor down for good.
_REQUEST_ERRORS = (ValueError, TypeError, UnicodeError, ArithmeticError, pa.ArrowException)


class WriteFault:
    """Whether the store's writes are paused, why, and the probes that end the pause.

    Args:
        location: The store (only a local folder ever pauses: see ``write_faults``).
        health: The storage actor's health, which says ``read-only`` while paused.
        tell: Queues a request to the storage actor (the usage flush put off).
        pending: How many usage counts wait to be written.
    """

    def __init__(
        self,
        location: Location | None,
        health: Health,
        tell: Callable[[StorageRequest], bool],
        pending: Callable[[], int],
    ) -> None:
        self.location = location
        self.health = health
        self._tell = tell
        self._pending = pending
        # Why writes are paused; None while they are not.
        self.error: StoreError | None = None
        # True once writes stay refused until restart (see ``stay``).
        self.final = False
        # Asked once the disk takes a probe, before writes resume: False keeps them paused
        # (the storage actor takes the writer lock it owes here).
        self.reclaim: Callable[[], Awaitable[bool]] | None = None
        self._delay = FIRST_PROBE
        self._resumed_at = -math.inf
        self._on_resume: list[Callable[[], object]] = []

    def refusal(self, error: Exception) -> RalphContextError:
        """What a request that raised ``error`` is refused with: the store's cause when
        the disk refused it (writes are paused from now on), a ``StoreError`` when the
        store refused its data.

        Raises:
            Exception: ``error`` itself when it is neither (a bug or a lost resource: the
                actor crashes and is restarted, as before).
        """
        if isinstance(error, _REQUEST_ERRORS) and unwritable(error, self.location) is None:
            return StoreError(f"the store rejected the request: {error}")
        return self.check(error)

    def check(self, error: Exception) -> StoreUnwritable:
        """Pause writes if the disk refused ``error``'s write, and return why.

        Raises:
            Exception: ``error`` itself when the disk did not refuse it.
        """
        found = unwritable(error, self.location)
        if found is None:
            raise error
        return self.pause(found, f"{type(error).__name__}: {error}")

    def pause(self, found: StoreUnwritable, raised: str = "") -> StoreUnwritable:
        """Pause writes because of ``found`` (a failed write's cause, or the writer lock
        the disk would not let the store take at open), and return it."""
        if self.error is None:
            log.error("store_read_only", error=str(found), raised=raised[:500])
            if anyio.current_time() - self._resumed_at >= _STEADY:
                self._delay = FIRST_PROBE
        self.error = found
        self.health.degrade(READ_ONLY, found)
        return found

    def stay(self, error: StoreError) -> None:
        """Keep writes refused with ``error`` until the process restarts: no more probes
        (another process took the writer lock while this one waited for the disk)."""
        log.error("store_read_only_until_restart", error=str(error))
        self.final = True
        self.error = error
        self.health.degrade(READ_ONLY, error)

    def refuse(self, request: StorageRequest) -> object:
        """The answer to ``request`` while writes are paused: the engine's own background
        work is put off (usage counts stay in memory, a vector index repair waits), every
        other write is refused with the cause.

        Raises:
            StoreUnwritable: Why writes are paused.
        """
        assert self.error is not None, "asked only while paused"
        match request:
            case FlushUsage():
                return None
            case RepairVectorIndex():
                return False
        raise self.error

    def on_resume(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` (on the event loop, never waited for) whenever writes resume."""
        self._on_resume.append(callback)

    async def recover(self) -> None:
        """Until cancelled (the engine's lifetime): whenever writes are paused, probe the
        disk with backoff until it takes a write, then resume them. Never raises."""
        while True:
            await self.health.wait_until(lambda _h: self.error is not None and not self.final)
            # Jitter: several stores of one process on one full disk do not probe at once.
            await anyio.sleep(self._delay * random.uniform(1.0, 1.25))
            self._delay = min(LAST_PROBE, self._delay * 2)
            assert isinstance(self.location, Path), "only a local store pauses"
            try:
                await anyio.to_thread.run_sync(probe, self.location)
            except OSError as exc:
                log.info("store_still_read_only", error=str(exc), next_probe_s=self._delay)
                continue
            if self.reclaim is not None and not await self.reclaim():
                continue
            self._resume()

    def _resume(self) -> None:
        log.warning("store_writable_again", was=str(self.error))
        self.error = None
        self._resumed_at = anyio.current_time()
        self.health.restore()
        if self._pending():
            self._tell(FlushUsage())
        for callback in self._on_resume:
            try:
                callback()
            except Exception as exc:  # a callback must not end the probes
                log.warning("resume_callback_failed", error=f"{type(exc).__name__}: {exc}")
