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

Neither a key nor a fingerprint is kept as it came (issue 62: a ``ghp_`` token used as a
key sat in ``request_keys.lance``): each is an HMAC under the store's key (``store_key``),
marked ``hmac:``, and a claim object on object storage is named by the key's HMAC. A table
written before holds raw keys: ``migrate`` rewrites them as digests when a writer opens it
(its caller then drops the old versions). Claim objects written before are named by a plain
SHA-256 of the key and are not found any more: a retry spanning the upgrade may store its
item twice. A forget drops the keys of the items it deletes (``drop_targets``), and its
tombstones (``tombstones``) refuse their retries.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from ralph_context.errors import IdempotencyConflict
from ralph_context.models import ContextItem, IterationResult
from ralph_context.object_location import ObjectLocation
from ralph_context.storage.store_key import StoreKey

__all__ = [
    "CLAIMS",
    "REQUEST_KEYS",
    "Claim",
    "RequestLog",
    "item_fingerprint",
    "iteration_fingerprint",
    "request_keys_schema",
]

REQUEST_KEYS = "request_keys"
# The folder of key claims on a store replicas share (see RequestLog).
CLAIMS = "request_key_claims"
_FINGERPRINT = "fingerprint"
# What a stored key or fingerprint starts with once it is a digest (see the docstring).
SEALED = "hmac:"
# The rows of a table written before digests.
_RAW = f"key NOT LIKE '{SEALED}%'"


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
    fingerprint of its arguments (``None``: claimed before fingerprints were kept), as
    stored: sealed (``SEALED``) by ``seal``, the store's digest of a fingerprint."""

    target: str
    fingerprint: str | None = None
    seal: Callable[[str], str] | None = field(default=None, compare=False, repr=False)

    def target_for(self, key: str, fingerprint: str | None) -> str:
        """The target, for a request with ``fingerprint`` that repeats the key.

        Raises:
            IdempotencyConflict: The key was claimed by a request with other arguments.
        """
        given = fingerprint
        if (
            given is not None
            and self.seal is not None
            and (self.fingerprint or "").startswith(SEALED)
        ):
            given = self.seal(given)
        if self.fingerprint is not None and given not in (None, self.fingerprint):
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
    """Keys seen so far and what each produced, by the keys' digests. ``table`` is
    ``None`` for a read-only open of a store written before keys existed (nothing to look
    up); ``key``, the store's (on a shared store without one: the shared store's own)."""

    def __init__(
        self,
        table: Any | None,
        *,
        claims: ObjectLocation | None = None,
        key: StoreKey | None = None,
    ) -> None:
        self.table = table
        # On object storage, where replicas share the store, each key is also a small object
        # under ``claims``, created only if absent: the first replica to create it owns the
        # key, and a lookup is one GET (the table, one fragment per keyed write, cost a GET
        # per fragment: 80 a lookup after 160 writes).
        self.claims = claims
        self._key = key or StoreKey.of(claims)
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
                self._sealed_key(key): self._claim(target, fingerprint)
                for key, target, fingerprint in zip(keys, targets, prints, strict=True)
            }

    def digest(self, key: str) -> str:
        """``key`` as it is stored: its HMAC under the store's key, marked."""
        return SEALED + self._key.digest("request_key", key)

    def _seal(self, fingerprint: str) -> str:
        return SEALED + self._key.digest("request_fingerprint", fingerprint)

    def _sealed_key(self, stored: str) -> str:
        """A key as read from the table: a digest, or (written before digests) raw."""
        return stored if stored.startswith(SEALED) else self.digest(stored)

    def _claim(self, target: str, fingerprint: str | None) -> Claim:
        return Claim(target, fingerprint, seal=self._seal)

    def get(self, key: str) -> Claim | None:
        """What the first write with ``key`` produced, if there was one."""
        return self._known.get(self.digest(key))

    def find(self, key: str) -> Claim | None:
        """:meth:`get`, then, on a store replicas share, the key's claim: a client whose
        write timed out on one replica retries on another, which must find the first's."""
        sealed = self.digest(key)
        known = self._known.get(sealed)
        if known is not None or self.claims is None:
            return known
        found = self.claims.read(self.claim_name(key))
        if found is None:
            return None
        self._known[sealed] = self._decoded(found[0])
        return self._known[sealed]

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
            sealed = [
                (self.digest(key), target, None if printed is None else self._seal(printed))
                for key, target, printed in entries
            ]
            rows = [
                {"key": key, "target": target, "created_at": now, _FINGERPRINT: printed}
                for key, target, printed in sealed
            ]
            self.table.add(pa.Table.from_pylist(rows, schema=request_keys_schema()))
            made = {key: self._claim(target, printed) for key, target, printed in sealed}
            self._known.update(made)
            return list(made.values())
        claims = []
        for key, target, fingerprint in entries:
            claim = self._claim(target, None if fingerprint is None else self._seal(fingerprint))
            name = self.claim_name(key)
            if self.claims.write(name, _encoded(claim), replacing="") is None:
                found = self.claims.read(name)
                claim = self._decoded(found[0]) if found is not None else claim
            self._known[self.digest(key)] = claim
            claims.append(claim)
        return claims

    def put(self, key: str, target: str, fingerprint: str | None = None) -> None:
        """Remember ``key -> target`` (one table write; the key's claim on a shared
        store).

        Raises:
            IdempotencyConflict: Another replica claimed the key for a different request.
        """
        self.claim(key, target, fingerprint).target_for(key, fingerprint)

    def targeting(self, ids: Sequence[str]) -> list[str]:
        """The digests of the keys whose write made one of ``ids`` (that this process
        knows: on a shared store, the keys other replicas claimed and this one never saw
        are not listed)."""
        wanted = set(ids)
        return [sealed for sealed, claim in self._known.items() if claim.target in wanted]

    def drop(self, digests: Sequence[str]) -> None:
        """Forget the keys of ``digests`` (as :meth:`digest` made them): their rows, or on
        a shared store their claim objects. A forget's scrub takes the rows off the disk."""
        if not digests:
            return
        for sealed in digests:
            self._known.pop(sealed, None)
        if self.claims is not None:
            for sealed in digests:
                self.claims.remove(f"{CLAIMS}/{sealed.removeprefix(SEALED)}")
            return
        if self.table is None:
            return
        for start in range(0, len(digests), 500):
            # Digests are "hmac:" and hex: nothing of a client's reaches the clause.
            listed = ", ".join(f"'{sealed}'" for sealed in digests[start : start + 500])
            self.table.delete(f"key IN ({listed})")

    def migrate(self) -> bool:
        """Rewrite the keys a table written before digests holds raw (and their
        fingerprints) as digests; True when it did, and the caller is to drop the table's
        old versions (they hold the raw keys)."""
        if self.table is None or not self.table.count_rows(_RAW):
            return False
        columns = [
            c for c in ("key", "target", "created_at", _FINGERPRINT) if c in self.table.schema.names
        ]
        raw = self.table.search().where(_RAW).select(columns).limit(None).to_arrow().to_pylist()
        if _FINGERPRINT not in self.table.schema.names:
            self.table.add_columns(pa.field(_FINGERPRINT, pa.string(), nullable=True))
        rows = [
            {
                "key": self.digest(row["key"]),
                "target": row["target"],
                "created_at": row["created_at"],
                _FINGERPRINT: _resealed(row.get(_FINGERPRINT), self._seal),
            }
            for row in raw
        ]
        self.table.delete(_RAW)
        self.table.add(pa.Table.from_pylist(rows, schema=request_keys_schema()))
        return True

    def claim_name(self, key: str) -> str:
        """The object of ``key``'s claim: named by the key's digest, never the key."""
        return f"{CLAIMS}/{self.digest(key).removeprefix(SEALED)}"

    def _decoded(self, data: bytes) -> Claim:
        """A claim object's content: JSON, or (written before fingerprints) the bare
        target, an item id or ``""``, which never starts with ``{``."""
        if not data.startswith(b"{"):
            return self._claim(data.decode("utf-8"), None)
        fields = json.loads(data)
        return self._claim(str(fields["target"]), fields.get(_FINGERPRINT))


def _resealed(fingerprint: str | None, seal: Callable[[str], str]) -> str | None:
    if fingerprint is None or fingerprint.startswith(SEALED):
        return fingerprint
    return seal(fingerprint)


def _encoded(claim: Claim) -> bytes:
    return json.dumps({"target": claim.target, _FINGERPRINT: claim.fingerprint}).encode()
