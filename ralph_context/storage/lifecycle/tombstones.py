"""Tombstones: what a forget leaves behind so that nothing brings the forgotten back.

Deleting rows is not enough for a forget to be final: an export taken before it, a client
retrying a keyed ``store_context``, another replica that still knows the key, or a capture
the hooks spooled while no server ran would each store the item again. So a forget records,
in the store's small ``tombstones`` table, what it forgot as keyed digests
(``store_key``), never as text: each item's id, its content, the idempotency keys whose
write it was, and the numbers of the iteration records it deleted or cleared. Then:

- a write of an item whose id is tombstoned is refused (``ItemForgotten``): the keyed
  retry that re-created an item under its old id, on this replica or another;
- a keyed write whose key is tombstoned is refused before anything is embedded;
- ``import`` skips tombstoned items and iteration records (``--include-forgotten`` brings
  them back, and lifts their tombstones);
- a capture spooled before the forget whose content is tombstoned is dropped when the
  spool is taken (``Tombstones.forgotten_since``).

A new item with the same text stored after the forget is a new memory and is stored: a
forget of ``"tests passed"`` must not stop a loop from ever saying it again.

On object storage the table is shared like the others: a replica reads the others'
tombstones at most ``refresh`` after they were written.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from ralph_context.storage.store_key import StoreKey

__all__ = ["CONTENT", "ID", "ITERATION", "KEY", "TOMBSTONES", "Tombstones", "tombstones_schema"]

TOMBSTONES = "tombstones"
# What a tombstone stands for.
ID, CONTENT, KEY, ITERATION = "id", "content", "key", "iteration"


def tombstones_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("kind", pa.string(), nullable=False),
            pa.field("digest", pa.string(), nullable=False),
            pa.field("forgotten_at", pa.timestamp("us", tz="UTC"), nullable=False),
        ]
    )


class Tombstones:
    """The store's tombstones, kept in memory (see the module's docstring). ``table`` is
    ``None`` for a read-only open of a store written before tombstones existed."""

    def __init__(
        self, table: Any | None, key: StoreKey, *, shared: bool = False, refresh: float = 1.0
    ) -> None:
        self.table = table
        self._key = key
        self._shared = shared
        self._refresh = refresh
        self._read_at = -float("inf")
        self._version: int | None = None
        self._known: dict[tuple[str, str], datetime] = {}
        self._load()

    def digest(self, kind: str, value: str) -> str:
        """The keyed digest ``value`` is tombstoned under as a ``kind``."""
        return self._key.digest(kind, value)

    def bury(self, entries: Iterable[tuple[str, str]], at: datetime | None = None) -> int:
        """Tombstone ``(kind, digest)`` pairs not tombstoned yet, in one write; how many.

        Raises:
            RuntimeError: The store is open read-only.
        """
        when = at or datetime.now(UTC)
        fresh = sorted({entry for entry in entries if entry not in self._known})
        if not fresh:
            return 0
        if self.table is None:
            raise RuntimeError("a read-only open records no tombstones")
        rows = [{"kind": kind, "digest": digest, "forgotten_at": when} for kind, digest in fresh]
        self.table.add(pa.Table.from_pylist(rows, schema=tombstones_schema()))
        self._known.update(dict.fromkeys(fresh, when))
        return len(fresh)

    def lift(self, entries: Sequence[tuple[str, str]]) -> None:
        """Remove the tombstones of ``(kind, digest)`` pairs (an import told to bring the
        forgotten back)."""
        known = [entry for entry in entries if entry in self._known]
        if not known or self.table is None:
            return
        for start in range(0, len(known), 500):
            part = known[start : start + 500]
            # Digests are hex and kinds our own words: nothing of a user's reaches the clause.
            where = " OR ".join(f"(kind = '{k}' AND digest = '{d}')" for k, d in part)
            self.table.delete(where)
        for entry in known:
            self._known.pop(entry, None)

    def lift_values(self, entries: Sequence[tuple[str, str]]) -> None:
        """:meth:`lift` for ``(kind, value)`` pairs (digested here)."""
        self.lift([(kind, self.digest(kind, value)) for kind, value in entries])

    def forgotten(self, kind: str, value: str) -> bool:
        """True when ``value`` (as a ``kind``) was forgotten."""
        return self.when(kind, value) is not None

    def when(self, kind: str, value: str) -> datetime | None:
        """When ``value`` (as a ``kind``) was forgotten, if it was."""
        self._refreshed()
        if not self._known:
            return None  # no digest to compute: the store never forgot anything
        return self._known.get((kind, self.digest(kind, value)))

    def has_digest(self, kind: str, digest: str) -> bool:
        """True when the digest (as :meth:`digest` made it) is tombstoned."""
        self._refreshed()
        return (kind, digest) in self._known

    def forgotten_since(self, kind: str, value: str, since: datetime) -> bool:
        """True when ``value`` was forgotten after ``since`` (a capture made before the
        forget, taken from the spool after it)."""
        when = self.when(kind, value)
        return when is not None and when >= since

    def _refreshed(self) -> None:
        """On object storage, the other replicas' tombstones: read again once per
        ``refresh`` when the table has a new version."""
        if not self._shared or self.table is None:
            return
        if time.monotonic() - self._read_at < self._refresh:
            return
        self.table.checkout_latest()
        if self.table.version != self._version:
            self._load()
        self._read_at = time.monotonic()

    def _load(self) -> None:
        if self.table is None:
            return
        self._version = int(self.table.version)
        self._read_at = time.monotonic()
        if not self.table.count_rows():
            self._known = {}
            return
        rows = self.table.search().select(["kind", "digest", "forgotten_at"]).limit(None)
        found = rows.to_arrow().to_pylist()
        self._known = {(row["kind"], row["digest"]): row["forgotten_at"] for row in found}
