"""Group commit: writes that queue while a commit is in flight go in the next one together.

Each commit makes a table version: on local disk a manifest and a small fragment (what
compaction later merges), on object storage conditional requests that replicas writing
the same store collide on (a refused commit re-reads and retries with backoff; with 4
replicas 41-52 of 240 keyed writes were refused before this). So consecutive appends in
one batch become one commit: ``AddItems`` one ``add_items``, ``AddKeyed`` one
``add_keyed_many`` (the keys claimed together, then one append of the items whose claim
was won).

A batch holds what queued while the last request was served, and clients that wait for
each answer alternate: two of them writing one after another meet the lane one at a time
forever (each arrives while the other's commit runs). So once a write has been seen
queueing behind a commit (the store is *crowded*), a batch of writes waits a moment for
the next write to arrive: at most half of the last commit's time, and never more than
:data:`MAX_WAIT`. Two alternating writers then commit together and, answered together,
come back together. A lone writer never waits: nothing queues behind its commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

import anyio

from ralph_context.actors.storage.beside import BESIDE
from ralph_context.actors.storage.requests import AddItems, AddKeyed, StorageRequest
from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem
from ralph_context.runtime import Envelope
from ralph_context.storage.store.items import Keyed

__all__ = [
    "GROUPED",
    "MAX_WAIT",
    "Crowding",
    "answer_items",
    "group_runs",
    "item_pairs",
    "keyed_entries",
]

# Requests a run of which becomes one commit.
GROUPED = (AddItems, AddKeyed)
# The longest a batch of writes waits for one more (seconds), and for how long after a
# write last queued behind a commit the store counts as crowded.
MAX_WAIT = 0.1
CROWDED_FOR = 2.0
_POLL = 0.002

Batch = Sequence[Envelope[StorageRequest, object]]


class Lane(Protocol):
    @property
    def queued(self) -> int: ...

    def take_queued(self) -> Envelope[StorageRequest, object] | None: ...


class Crowding:
    """Whether writes have lately queued behind commits, and how long a commit takes."""

    def __init__(self) -> None:
        self.commit_s = 0.0
        self._crowded_at: float | None = None

    def committed(self, seconds: float, *, queued_behind: bool) -> None:
        """Note a write's commit: its time, and whether requests queued meanwhile."""
        self.commit_s = seconds
        if queued_behind:
            self._crowded_at = anyio.current_time()

    def wait_s(self) -> float:
        """How long a batch of writes waits for one more (0: it does not)."""
        if self._crowded_at is None or anyio.current_time() - self._crowded_at > CROWDED_FOR:
            return 0.0
        return min(MAX_WAIT, self.commit_s / 2)

    async def gather(self, lane: Lane, batch: Batch) -> Batch:
        """``batch``, with what queued during a short wait when the store is crowded and
        the batch is writes only (see the module's docstring)."""
        wait = self.wait_s()
        if not wait or not all(isinstance(e.request, GROUPED) for e in batch):
            return batch
        with anyio.move_on_after(wait):
            while not lane.queued:  # noqa: ASYNC110 - the inbox signals nothing to wait on
                await anyio.sleep(_POLL)
        more = list(batch)
        while (envelope := lane.take_queued()) is not None:
            more.append(envelope)
        return more


def group_runs(batch: Batch) -> list[Batch]:
    """``batch`` cut into runs: the appends first (a loop's write must not wait for the
    lifecycle's updates queued beside it; as in ``beside``, requests of different
    callers, all unanswered, may go in either order), then the rest in order; each run of
    consecutive requests of one grouped kind is one run, every other request a run of its
    own."""
    batch = [e for e in batch if isinstance(e.request, BESIDE)] + [
        e for e in batch if not isinstance(e.request, BESIDE)
    ]
    runs: list[Batch] = []
    index = 0
    while index < len(batch):
        kind = type(batch[index].request)
        end = index + 1
        if kind in GROUPED:
            while end < len(batch) and type(batch[end].request) is kind:
                end += 1
        runs.append(batch[index:end])
        index = end
    return runs


def keyed_entries(run: Batch) -> list[Keyed]:
    """The ``(item, vector, key, fingerprint)`` of each ``AddKeyed`` in ``run``."""
    requests = [cast(AddKeyed, envelope.request) for envelope in run]
    return [(r.item, r.vector, r.key, r.fingerprint) for r in requests]


def item_pairs(run: Batch) -> list[tuple[ContextItem, Vectors | None]]:
    """Every ``(item, vector)`` of the ``AddItems`` in ``run``, in order."""
    return [pair for envelope in run for pair in cast(AddItems, envelope.request).pairs]


def answer_items(run: Batch, stored: Sequence[ContextItem]) -> None:
    """Give each ``AddItems`` of ``run`` its share of ``stored`` (in order)."""
    start = 0
    for envelope in run:
        count = len(cast(AddItems, envelope.request).pairs)
        envelope.resolve(list(stored[start : start + count]))
        start += count
