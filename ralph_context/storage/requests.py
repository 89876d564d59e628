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

A key stands for one request, as with payment APIs: beside its target the claim keeps a
fingerprint of the request's arguments, and the same key with other arguments is refused
(``IdempotencyConflict``) instead of answered with the first result, which silently dropped
the new content. Claims written before fingerprints were kept have none and answer any
request with their key, as they always did: a table of keys gains the ``fingerprint``
column (empty for its old rows) on its first write by this version, and a claim object on
object storage holds JSON where it held the bare target.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from ralph_context.errors import IdempotencyConflict
from ralph_context.models import ContextItem, IterationResult
from ralph_context.object_location import ObjectLocation

__all__ = [
    "CLAIMS",
    "REQUEST_KEYS",
    "Claim",
    "RequestLog",
    "claim_name",
    "item_fingerprint",
    "iteration_fingerprint",
    "request_keys_schema",
]

REQUEST_KEYS = "request_keys"
# The folder of key claims on a store replicas share (see RequestLog).
CLAIMS = "request_key_claims"
_FINGERPRINT = "fingerprint"


def request_keys_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("key", pa.string(), nullable=False),
            pa.field("target", pa.string(), nullable=False),
            pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field(_FINGERPRINT, pa.string(), nullable=True),
        ]
    )


@dataclass(frozen=True)
class Claim:
    """What a key stands for: the first request's target (an item id, or ``""``) and the
    fingerprint of its arguments (``None``: claimed before fingerprints were kept)."""

    target: str
    fingerprint: str | None = None

    def target_for(self, key: str, fingerprint: str | None) -> str:
        """The target, for a request with ``fingerprint`` that repeats the key.

        Raises:
            IdempotencyConflict: The key was claimed by a request with other arguments.
        """
        if self.fingerprint is not None and fingerprint not in (None, self.fingerprint):
            raise IdempotencyConflict(
                f"idempotency_key {key!r:.80} {IdempotencyConflict.MARK}; repeat that "
                "request's arguments to get its result, or use a new key for a new one"
            )
        return self.target


def _fingerprint(kind: str, arguments: Mapping[str, object]) -> str:
    """A digest of a request's arguments as canonical JSON (sorted keys; lone surrogates
    and big integers survive ``json.dumps``)."""
    text = json.dumps([kind, arguments], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def item_fingerprint(item: ContextItem, iteration: int | None) -> str:
    """The fingerprint of a keyed store: the item as checked and redacted (so one request
    always gives one fingerprint), and the iteration as asked (``None`` when it was left to
    the store's clock, which moves between a call and its retry)."""
    return _fingerprint(
        "store",
        {
            "content": item.content,
            "content_type": item.content_type.value,
            "tags": list(item.tags),
            "metadata": item.metadata,
            "source": item.source,
            "iteration": iteration,
        },
    )


def iteration_fingerprint(result: IterationResult) -> str:
    """The fingerprint of a keyed iteration record: every field but when it was made."""
    return _fingerprint("iteration", result.model_dump(mode="json", exclude={"created_at"}))


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
        self._known: dict[str, Claim] = {}
        if table is not None and table.count_rows():
            columns = [c for c in ("key", "target", _FINGERPRINT) if c in table.schema.names]
            rows = table.search().select(columns).limit(None).to_arrow()
            keys, targets = rows.column("key").to_pylist(), rows.column("target").to_pylist()
            prints = (
                rows.column(_FINGERPRINT).to_pylist()
                if _FINGERPRINT in columns
                else [None] * len(keys)  # a table from before fingerprints
            )
            self._known = {
                key: Claim(target, fingerprint)
                for key, target, fingerprint in zip(keys, targets, prints, strict=True)
            }

    def get(self, key: str) -> Claim | None:
        """What the first write with ``key`` produced, if there was one."""
        return self._known.get(key)

    def find(self, key: str) -> Claim | None:
        """:meth:`get`, then, on a store replicas share, the key's claim: a client whose
        write timed out on one replica retries on another, which must find the first's."""
        known = self._known.get(key)
        if known is not None or self.claims is None:
            return known
        found = self.claims.read(claim_name(key))
        if found is None:
            return None
        self._known[key] = _decoded(found[0])
        return self._known[key]

    def claim(self, key: str, target: str, fingerprint: str | None = None) -> Claim:
        """Record ``key -> target`` unless a write with ``key`` came first (on another
        replica); the claim the key stands for, either way."""
        return self.claim_many([(key, target, fingerprint)])[0]

    def claim_many(self, entries: Sequence[tuple[str, str, str | None]]) -> list[Claim]:
        """:meth:`claim` for several distinct ``(key, target, fingerprint)``: on a local
        store one table write for all (its one writer has no rival); on a shared store one
        claim object each."""
        if not entries:
            return []
        if self.claims is None:
            if self.table is None:
                raise RuntimeError("a read-only open records no request keys")
            if _FINGERPRINT not in self.table.schema.names:  # a table from before them
                self.table.add_columns(pa.field(_FINGERPRINT, pa.string(), nullable=True))
            now = datetime.now(UTC)
            rows = [
                {"key": key, "target": target, "created_at": now, _FINGERPRINT: fingerprint}
                for key, target, fingerprint in entries
            ]
            self.table.add(pa.Table.from_pylist(rows, schema=request_keys_schema()))
            made = {key: Claim(target, fingerprint) for key, target, fingerprint in entries}
            self._known.update(made)
            return list(made.values())
        claims = []
        for key, target, fingerprint in entries:
            claim = Claim(target, fingerprint)
            if self.claims.write(claim_name(key), _encoded(claim), replacing="") is None:
                found = self.claims.read(claim_name(key))
                claim = _decoded(found[0]) if found is not None else claim
            self._known[key] = claim
            claims.append(claim)
        return claims

    def put(self, key: str, target: str, fingerprint: str | None = None) -> None:
        """Remember ``key -> target`` (one table write; the key's claim on a shared
        store).

        Raises:
            IdempotencyConflict: Another replica claimed the key for a different request.
        """
        self.claim(key, target, fingerprint).target_for(key, fingerprint)


def claim_name(key: str) -> str:
    """The object of ``key``'s claim: keys are the client's text, names must be safe."""
    return f"{CLAIMS}/{hashlib.sha256(key.encode('utf-8')).hexdigest()}"


def _encoded(claim: Claim) -> bytes:
    return json.dumps({"target": claim.target, _FINGERPRINT: claim.fingerprint}).encode()


def _decoded(data: bytes) -> Claim:
    """A claim object's content: JSON, or (written before fingerprints) the bare target,
    an item id or ``""``, which never starts with ``{``."""
    if not data.startswith(b"{"):
        return Claim(data.decode("utf-8"))
    fields = json.loads(data)
    return Claim(str(fields["target"]), fields.get(_FINGERPRINT))
