"""Idempotency keys: a write retried with the key of an earlier one returns the earlier
one's result and writes nothing.

A client that timed out on ``store_context`` cannot tell whether the item was stored;
retrying without a key stored it twice. With a key, the store remembers ``key -> target``
(the item id, or for an iteration result the id of its error item, empty when it had none)
in the small ``request_keys`` table, and in memory for the process's lifetime.

The key is written *before* the item, in its own write: a writer killed between the two
leaves a key whose item is missing, and the retry then stores the item under the id the
key names (so the retry finishes the first call instead of starting a second). The price:
a key whose item was later archived returns the archived item, and one whose item was
forgotten or pruned stores it again (a retry arrives seconds later, a prune ~100
iterations later). Keys are kept as long as the store.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from ralph_context.storage import reads
from ralph_context.storage.filters import sql_string

__all__ = ["REQUEST_KEYS", "RequestLog", "request_keys_schema"]

REQUEST_KEYS = "request_keys"


def request_keys_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("key", pa.string(), nullable=False),
            pa.field("target", pa.string(), nullable=False),
            pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
        ]
    )


class RequestLog:
    """Keys seen so far and what each produced. ``table`` is ``None`` for a read-only open
    of a store written before keys existed (nothing to look up)."""

    def __init__(self, table: Any | None, *, shared: bool = False) -> None:
        self.table = table
        # Other replicas record keys too (a store on object storage): see ``find``.
        self.shared = shared
        self._targets: dict[str, str] = {}
        if table is not None and table.count_rows():
            rows = table.search().select(["key", "target"]).limit(None).to_arrow()
            keys = rows.column("key").to_pylist()
            self._targets = dict(zip(keys, rows.column("target").to_pylist(), strict=True))

    def get(self, key: str) -> str | None:
        """What the first write with ``key`` produced, if there was one."""
        return self._targets.get(key)

    def find(self, key: str) -> str | None:
        """:meth:`get`, then, on a store replicas share, the table: a client whose write
        timed out on one replica retries on another, which must find the first's key."""
        known = self._targets.get(key)
        if known is not None or not self.shared or self.table is None:
            return known
        # Now, not at the next refresh: the retry may follow the first call within it.
        self.table.checkout_latest()
        rows = reads.rows_where(self.table, f"key = {sql_string(key)}", 1, columns=["target"])
        if not rows.num_rows:
            return None
        found = self._targets[key] = str(rows.column("target")[0].as_py())
        return found

    def put(self, key: str, target: str) -> None:
        """Remember ``key -> target`` (one table write)."""
        if self.table is None:
            raise RuntimeError("a read-only open records no request keys")
        row = {"key": key, "target": target, "created_at": datetime.now(UTC)}
        self.table.add(pa.Table.from_pylist([row], schema=request_keys_schema()))
        self._targets[key] = target
