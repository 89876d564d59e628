"""What the storage actor is asked and what its reads answer: one frozen dataclass per
request its inbox takes, their union ``StorageRequest``, and the shapes of search hits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem, ContextState, IterationResult
from ralph_context.storage.store.lifecycle import Forgettable
from ralph_context.storage.store.rewrite import Rewritten
from ralph_context.storage.table.pack_space import PackSpace

VectorHit = tuple[ContextItem, float, Vectors]
TextHit = tuple[ContextItem, float, Vectors | None]
Adjacent = tuple[ContextItem, Vectors | None]


@dataclass(frozen=True)
class AddItems:
    pairs: tuple[tuple[ContextItem, Vectors | None], ...]


@dataclass(frozen=True)
class AddKeyed:
    """One item under an idempotency key (keyed writes queued together commit together:
    group)."""

    item: ContextItem
    vector: Vectors | None
    key: str
    fingerprint: str | None = None  # of the request's arguments (storage.table.requests)


@dataclass(frozen=True)
class PutRequestKey:
    key: str
    target: str
    fingerprint: str | None = None


@dataclass(frozen=True)
class FlushUsage:
    """Write the usage counters changed in memory to ``item_usage``."""


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
class Maintain:
    reclaim: bool = False
    scrub: bool = False  # see LanceStore.scrub
    settle: bool = False  # old versions past the retention window go now (see settle)


@dataclass(frozen=True)
class MaintainIfDue:
    """Run the maintenance that fell due while the loop was busy, if it is calm now (sent
    by ``actors.settle.maintain_when_calm``); nothing when it is not due or not calm."""


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
class Prune:
    hot: tuple[str, ...]
    archived: tuple[str, ...]


@dataclass(frozen=True)
class Forget:
    """Forget what a selection picked (``store_forget``: its plan, tombstones, deletes,
    keys and iteration records; an unfinished forget's first); the caller then scrubs and
    sends ``EndForget``."""

    found: Forgettable


@dataclass(frozen=True)
class EndForget:
    """The forget's scrub is done: its plan goes."""


@dataclass(frozen=True)
class Unbury:
    """Lift the tombstones of these ``(kind, value)`` pairs (an import bringing forgotten
    items back)."""

    entries: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SetVectors:
    vectors: dict[str, Vectors]


@dataclass(frozen=True)
class RepairVectorIndex:
    """Retrain the vector index after a vector search failed on it (damaged files)."""


@dataclass(frozen=True)
class Rewrite:
    """Rows rewritten in place (see ``storage/store/rewrite.py``)."""

    hot: tuple[tuple[ContextItem, Vectors | None], ...]
    archived: tuple[Rewritten, ...]


@dataclass(frozen=True)
class InPacks:
    """Run a tool pack's blocking function on its tables (see ``storage/table/pack_space.py``)."""

    function: Callable[[PackSpace], object]


StorageRequest = (
    AddItems
    | AddKeyed
    | PutRequestKey
    | FlushUsage
    | AdjustUsefulness
    | DeleteItems
    | AddIteration
    | Maintain
    | MaintainIfDue
    | SetState
    | SummarizeItems
    | ArchiveItems
    | Prune
    | Forget
    | EndForget
    | Unbury
    | RepairVectorIndex
    | SetVectors
    | Rewrite
    | InPacks
)
