"""Appends beside maintenance: a write in the loop does not wait for a compaction.

Maintenance runs in the storage actor's lane: before this, every request that arrived
during one waited for all of it (a loop storing its result at 100k items: p50 27 ms, p99
0.9 s; at 1M p99 2.5 s). Appends do not need to wait. Lance resolves an append against a
concurrent compaction, index merge or cleanup (they touch other fragments, or none), and
the work itself runs in the low-priority upkeep process, so the writer's process is idle
meanwhile. So while a regular maintenance (or a settling pass) runs, this serves the
appends that arrive at once (``AddItems``: items, the loop's errors, merged as usual;
``AddKeyed`` and ``PutRequestKey``: the same with an idempotency key, an append to the
keys table too; ``AddIteration``: a loop's iteration record, an upsert LanceDB retries on
a conflict) and keeps every other request for after it, in order.

Why only these: an update or a delete may conflict with a compaction rewriting the same
fragments (one of them would fail); a scrub or a reclaim deletes files no version holds
yet, which an append in flight has written and not committed. Those run alone, as before.
Reordering is safe: a caller waits for each answer, so a caller's own requests keep their
order, and a request kept for later is of another caller: unanswered, it is concurrent with
the append, and either order is one its caller could have seen. Appends keep their order
among themselves, and the kept requests theirs. (Before, an append did not pass a kept
request: at 100k items the loop's lifecycle pass queues an update most iterations, and the
next iteration's record then waited behind the whole maintenance: p99 ~1 s.)

The engine's own background requests kept meanwhile (a lifecycle pass's archive slice)
were sent in a quiet moment, but a maintenance lasts ~0.5 s at 100k items: served the
moment it ended, they landed inside the loop's next search (in the 100k loop of
``bench latency``, every search that overlapped an archive slice did so this way). Kept
background requests alone therefore wait for the next quiet moment, appends still served
beside, unless a caller's own request is kept behind them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Protocol, TypeVar

import anyio

from ralph_context.actors.storage.requests import (
    AddItems,
    AddIteration,
    AddKeyed,
    ArchiveItems,
    FlushUsage,
    Prune,
    PutRequestKey,
    RepairVectorIndex,
    SetState,
    SetVectors,
    StorageRequest,
    SummarizeItems,
)
from ralph_context.runtime import Envelope, Foreground
from ralph_context.runtime.beside import serve_beside

__all__ = ["BACKGROUND", "BESIDE", "maintain_beside_appends"]

T = TypeVar("T")
R = TypeVar("R")

# Requests served while maintenance runs.
BESIDE = (AddItems, AddKeyed, AddIteration, PutRequestKey)
# Requests of the engine's own background work: kept for after a maintenance, they do not
# hurry it (a hurried maintenance runs at the writer's priority, and the loop's embedding
# beside it took 80 ms instead of 20: the lifecycle queues an update most iterations).
BACKGROUND = (
    SetState,
    SummarizeItems,
    ArchiveItems,
    Prune,
    FlushUsage,
    SetVectors,
    RepairVectorIndex,
)
# How often the inbox is looked at while maintenance runs (seconds): an append waits at
# most this long for its turn.
_POLL = 0.005
# The longest kept background requests wait for a quiet moment (seconds): the lifecycle's
# own longest rest between two steps, so a steady stream of requests cannot starve them.
_BACKGROUND_WAIT = 0.5


class Lane(Protocol):
    behind: int  # requests of callers waiting for the maintenance (they hurry it)

    def take_queued(self) -> Envelope[StorageRequest, object] | None: ...

    async def handle_batch(self, batch: Sequence[Envelope[StorageRequest, object]]) -> None: ...


async def maintain_beside_appends(
    lane: Lane,
    maintain: Callable[[], Awaitable[T]],
    *,
    foreground: Foreground | None = None,
) -> T:
    """Run ``maintain()``; meanwhile serve queued appends at once and keep the rest, which
    are served, in order, once it is done. Returns what ``maintain()`` returned.

    ``foreground``: the loop's requests. When only background requests were kept, they
    wait until it is quiet (at most :data:`_BACKGROUND_WAIT`), appends still served at
    once; a caller's request kept meanwhile ends the wait.
    """
    deferred: list[Envelope[StorageRequest, object]] = []
    asked = anyio.Event()  # a caller's own request is kept: serve now

    def keep(envelope: Envelope[StorageRequest, object]) -> None:
        deferred.append(envelope)
        if not isinstance(envelope.request, BACKGROUND):
            lane.behind += 1
            asked.set()

    def beside(work: Callable[[], Awaitable[R]]) -> Awaitable[R]:
        return serve_beside(
            work,
            take=lane.take_queued,
            at_once=lambda envelope: isinstance(envelope.request, BESIDE),
            serve=lane.handle_batch,
            keep=keep,
            poll=_POLL,
        )

    try:
        result = await beside(maintain)
        if deferred and foreground is not None and not asked.is_set():
            quiet = partial(foreground.quiet, at_most=_BACKGROUND_WAIT)
            await beside(lambda: _first(quiet, asked.wait))
        lane.behind = 0
        if deferred:
            await lane.handle_batch(deferred)
    finally:
        lane.behind = 0
        for envelope in deferred:  # a crash or a cancellation: fail them fast (no-op if answered)
            envelope.abandon()
    return result


async def _first(*waits: Callable[[], Awaitable[object]]) -> None:
    """Return once any of ``waits`` has returned (the others are cancelled)."""
    async with anyio.create_task_group() as group:

        async def until(wait: Callable[[], Awaitable[object]]) -> None:
            await wait()
            group.cancel_scope.cancel()

        for wait in waits:
            group.start_soon(until, wait)
