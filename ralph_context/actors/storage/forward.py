"""The storage actor's side of one committer for a shared store (``storage.replicas.forwarding``):
its appends go to the replica holding the store's lease when that one takes them, and the
forwarded writes of the others are committed here when this replica holds it.

A forwarded write is not served in this actor's lane: it waits on the network, not on the
store, and the lane stays free for what is committed here. Its answer is then taken in:
the table checked out at the holder's version (a manifest read, in a worker thread, as
the refresh every ``storage.refresh_seconds`` does) and the running counts of a write.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from ralph_context.actors.storage.requests import StorageRequest
from ralph_context.config import StorageSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem
from ralph_context.runtime import Actor
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.replicas.forwarding import Forwarded, Forwarder

__all__ = ["FORWARD_AT_MOST", "StorageForward"]

# A batch larger than this is committed where it was asked (a bulk load: one commit
# anyway, and not worth a request body of tens of MB).
FORWARD_AT_MOST = 256


class StorageForward(Actor[StorageRequest, object]):
    """The forwarding helpers of :class:`~ralph_context.actors.storage.actor.StorageActor`."""

    _store: LanceStore | None
    settings: StorageSettings
    timeout: float
    # A token the holder's server takes (set by the engine's wiring from the token file).
    forward_token: str | None = None
    _forwarder: Forwarder | None = None

    @property
    def forwarder(self) -> Forwarder | None:
        """This replica's way to the store's committer (``None``: not a shared store)."""
        store = self._store
        if store is None or store.lease is None:
            return None
        if self._forwarder is None:
            self._forwarder = Forwarder(
                store.lease,
                self.settings.namespace,
                token=self.forward_token,
                timeout=self.timeout,
            )
        return self._forwarder

    async def takes_forwarded(self) -> bool:
        """Whether this replica commits the others' writes now: it names where it takes
        them and holds the lease (renewed here once half of its claim has passed: a holder
        whose own clients are idle keeps it while the others write)."""
        forwarder = self.forwarder
        if forwarder is None or forwarder.lease.address is None:
            return False
        return await forwarder.committer() is None and forwarder.lease.holds()

    async def items_version(self) -> int:
        """The hot table's version as this process sees it."""
        assert self._store is not None, "setup() opens the store"
        items = self._store.items
        return int(await anyio.to_thread.run_sync(lambda: items.version))

    async def forward_items(
        self, pairs: Sequence[tuple[ContextItem, Vectors | None]]
    ) -> list[ContextItem] | None:
        """``pairs`` as the committer stored them, or ``None``: commit them here."""
        forwarder = self.forwarder
        if forwarder is None or not pairs or len(pairs) > FORWARD_AT_MOST:
            return None
        forwarded = await forwarder.add_items(pairs)
        if forwarded is None:
            return None
        await self._saw(forwarded, sum(vector is not None for _, vector in pairs))
        return forwarded.items

    async def forward_keyed(
        self, item: ContextItem, vector: Vectors | None, key: str, fingerprint: str | None
    ) -> tuple[ContextItem, bool] | None:
        """``item`` under ``key`` as the committer stored it, or ``None``: commit it here.

        Raises:
            IdempotencyConflict: The key was used for another request.
        """
        forwarder = self.forwarder
        if forwarder is None:
            return None
        forwarded = await forwarder.add_keyed(item, vector, key, fingerprint)
        if forwarded is None:
            return None
        await self._saw(forwarded, int(forwarded.written and vector is not None))
        return forwarded.items[0], forwarded.written

    async def _saw(self, forwarded: Forwarded, vectors: int) -> None:
        store = self._store
        assert store is not None
        written = forwarded.items if forwarded.written else []
        await anyio.to_thread.run_sync(store.saw_forwarded, written, vectors, forwarded.version)

    async def close_forwarder(self) -> None:
        if self._forwarder is not None:
            await self._forwarder.aclose()
            self._forwarder = None
