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

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from ralph_context.object_location import ObjectLocation

__all__ = ["CLAIMS", "REQUEST_KEYS", "RequestLog", "request_keys_schema"]

REQUEST_KEYS = "request_keys"
# The folder of key claims on a store replicas share (see RequestLog).
CLAIMS = "request_key_claims"


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

    def __init__(self, table: Any | None, *, claims: ObjectLocation | None = None) -> None:
        self.table = table
        # On object storage, where replicas share the store, each key is also a small object
        # under ``claims``, created only if absent: the first replica to create it owns the
        # key, and a lookup is one GET (the table, one fragment per keyed write, cost a GET
        # per fragment: 80 a lookup after 160 writes).
        self.claims = claims
        self._targets: dict[str, str] = {}
        if table is not None and table.count_rows():
            rows = table.search().select(["key", "target"]).limit(None).to_arrow()
            keys = rows.column("key").to_pylist()
            self._targets = dict(zip(keys, rows.column("target").to_pylist(), strict=True))

    def get(self, key: str) -> str | None:
        """What the first write with ``key`` produced, if there was one."""
        return self._targets.get(key)

    def find(self, key: str) -> str | None:
        """:meth:`get`, then, on a store replicas share, the key's claim: a client whose
        write timed out on one replica retries on another, which must find the first's."""
        known = self._targets.get(key)
        if known is not None or self.claims is None:
            return known
        found = self.claims.read(_claim(key))
        if found is None:
            return None
        self._targets[key] = found[0].decode("utf-8")
        return self._targets[key]

    def claim(self, key: str, target: str) -> str:
        """Record ``key -> target`` unless a write with ``key`` came first (on another
        replica); the target the key stands for, either way."""
        return self.claim_many([(key, target)])[0]

    def claim_many(self, pairs: Sequence[tuple[str, str]]) -> list[str]:
        """:meth:`claim` for several distinct keys: on a local store one table write for
        all (its one writer has no rival); on a shared store one claim object each."""
        if not pairs:
            return []
        if self.claims is None:
            if self.table is None:
                raise RuntimeError("a read-only open records no request keys")
            now = datetime.now(UTC)
            rows = [{"key": key, "target": target, "created_at": now} for key, target in pairs]
            self.table.add(pa.Table.from_pylist(rows, schema=request_keys_schema()))
            self._targets.update(pairs)
            return [target for _, target in pairs]
        targets = []
        for key, target in pairs:
            if self.claims.write(_claim(key), target.encode("utf-8"), replacing="") is None:
                found = self.claims.read(_claim(key))
                target = found[0].decode("utf-8") if found is not None else target
            self._targets[key] = target
            targets.append(target)
        return targets

    def put(self, key: str, target: str) -> None:
        """Remember ``key -> target`` (one table write; the key's claim on a shared
        store)."""
        self.claim(key, target)


def _claim(key: str) -> str:
    """The object of ``key``'s claim: keys are the client's text, names must be safe."""
    return f"{CLAIMS}/{hashlib.sha256(key.encode('utf-8')).hexdigest()}"
