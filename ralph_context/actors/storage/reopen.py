"""The storage actor's opens after the first: the store opened again once it may be
written (the writer lock it owed: ``unwritable``), read beside the process that took the
lock meanwhile, or read at its newest readable versions when its latest is damaged
(``storage.integrity.damage``); and the checksums of what it commits
(``storage.integrity.checksums``).
"""

from __future__ import annotations

from pathlib import Path

import anyio

from ralph_context._logging import get_logger
from ralph_context.actors.storage.upkeep import StorageUpkeep
from ralph_context.config import StorageSettings
from ralph_context.errors import StoreLocked
from ralph_context.object_location import Location
from ralph_context.storage.integrity import damage
from ralph_context.storage.lance_store import LanceStore

__all__ = ["StorageReopen"]

log = get_logger("ralph_context.storage")

# Seconds between two seals of newly committed files (after a batch that wrote).
SEAL_EVERY = 2.0


class StorageReopen(StorageUpkeep):
    """Opening :class:`~ralph_context.actors.storage.actor.StorageActor`'s store; the state it
    uses is declared here and set by that class's ``__init__``."""

    settings: StorageSettings
    model: tuple[str, int] | None
    lock_at: Location | None
    _view: Path | None
    _upkeep_started: bool
    _sealed_at: float

    def _open_store(self) -> LanceStore:
        return LanceStore.configured(
            self.location,
            self.settings,
            model=self.model,
            read_only=self.read_only,
            lock_at=self.lock_at,
        )

    def _open_damaged(self) -> LanceStore:
        """The store at its newest readable versions, read-only (``storage.integrity.damage``)."""
        assert isinstance(self.location, Path), "only a local store is found damaged"
        self._view = damage.readable_view(self.location)
        return LanceStore.configured(
            self._view, self.settings, model=self.model, read_only=True, damaged=True
        )

    async def _take_lock(self) -> bool:
        """Take the writer lock this open owes (the disk refused its file at open), now
        that the disk takes writes: the store is opened again, holding it, so its running
        state (the next thread sequence, the counts) is read after any other writer's
        commits. True when writes may resume; False to go on waiting for the disk. Another
        process holding the lock by now keeps this one read-only until it restarts."""
        owed = self._store
        if owed is None or owed.lock_owed is None:
            return True
        try:
            fresh = await anyio.to_thread.run_sync(self._open_store)
        except StoreLocked as exc:
            self.write_fault.stay(
                StoreLocked(f"{exc}; this process serves it read-only until it restarts")
            )
            await self._read_beside_the_writer(owed)
            return False
        except Exception as exc:  # the probes go on; a bug here must not end them
            log.warning("store_lock_not_taken", error=f"{type(exc).__name__}: {exc}")
            return False
        if fresh.lock_owed is not None:
            fresh.close()
            return False
        fresh.usage.take_over(owed.usage)
        self._store, self._upkeep_started = fresh, False
        owed.close()
        log.info("store_lock_taken", location=str(self.location))
        return True

    async def _read_beside_the_writer(self, owed: LanceStore) -> None:
        """Serve reads from a read-only open from now on, which sees the other writer's
        commits (the open that owed the lock reads only its own)."""
        try:
            reader = await anyio.to_thread.run_sync(
                lambda: LanceStore.configured(
                    self.location, self.settings, model=self.model, read_only=True
                )
            )
        except Exception as exc:  # the old open still serves what it saw
            log.warning("store_reader_not_opened", error=f"{type(exc).__name__}: {exc}")
            return
        self._store = reader
        owed.close()

    async def _seal_if_due(self) -> None:
        """Checksum the data files committed since the last seal, at most every
        ``SEAL_EVERY`` seconds of writing (``storage.integrity.checksums``)."""
        now = anyio.current_time()
        if self._store is None or now - self._sealed_at < SEAL_EVERY:
            return
        self._sealed_at = now
        try:
            await anyio.to_thread.run_sync(self._store.seal)
        except Exception as exc:  # a table being made, a damaged file: verify says which
            log.warning("files_not_sealed", error=f"{type(exc).__name__}: {exc}"[:500])
