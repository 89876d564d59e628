"""One committer for a store that replicas share: each forwards its writes to the replica
holding the maintenance lease, which commits them in its group commits.

Every replica committing its own writes raced the others for each table version: with 4
replicas writing, 0.15 of every write's commits was refused (HTTP 412: another replica
took that version first), re-read and retried with backoff, up to 6 s for one write
(``bench replicas``, stop 56). Group commit merges the writes that meet in one process,
never those of two. So the holder, when it names where it takes writes (``lease``:
``storage.replica_url``, set by ``serve --transport http``), takes them all: a replica
sends the item with its vector (embedded where it was asked, so the holder's CPU is not
spent on it) over HTTP, the holder commits it with its own writes and answers with the
item as stored and the table version that holds it, and the sender checks that version
out before it answers its caller (its next read sees the write, as a local one would).

When nobody holding the lease takes writes, or the holder cannot be reached, or it says
it no longer holds the lease, the replica commits the write itself, as before: a write is
never refused for want of a committer. Only an answer that never came is a doubt: the
holder may have committed the write. A write with an idempotency key is then committed
here with the same key (the key's claim object decides, see ``requests``); one without is
refused with an error saying so, not stored a second time.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import numpy as np

from ralph_context._logging import get_logger
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import IdempotencyConflict, ItemForgotten, StoreError
from ralph_context.models import ContextItem
from ralph_context.storage.replicas.lease import MaintenanceLease

__all__ = [
    "FORWARD_PATH",
    "NOT_HOLDER",
    "Forwarded",
    "Forwarder",
    "decode_pairs",
    "encode_pairs",
]

log = get_logger("ralph_context.storage")

# Where a holder takes a namespace's forwarded writes (``server.replica_route``).
FORWARD_PATH = "/ns/{namespace}/replica/writes"
# The holder's answer when it does not hold the lease (the sender commits it itself).
NOT_HOLDER = 409
# How long a found committer (or none) is trusted before the lease is read again
# (seconds): a lease read is a request, not one per write.
LOOK_EVERY = 1.0
# How long a holder that could not be reached is passed over (seconds): a dead holder's
# lease stands until it lapses, and each write would otherwise wait for a connect first.
DOWN_FOR = 5.0
_CONNECT_SECONDS = 2.0


@dataclass(frozen=True)
class Forwarded:
    """The holder's answer: the items as stored, whether this request wrote them (a keyed
    write repeating an earlier key did not), and the items table's version holding them."""

    items: list[ContextItem]
    written: bool
    version: int


def encode_pairs(pairs: Sequence[tuple[ContextItem, Vectors | None]]) -> list[dict[str, Any]]:
    """Items and their vectors as JSON: a vector as its float32 bytes in base64, exact."""
    return [
        {
            "item": item.model_dump(mode="json"),
            "vector": None
            if vector is None
            else base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode(),
        }
        for item, vector in pairs
    ]


def decode_pairs(entries: object) -> list[tuple[ContextItem, Vectors | None]]:
    """:func:`encode_pairs` read back.

    Raises:
        ValueError: Not a list of ``{"item", "vector"}`` as it writes them.
    """
    if not isinstance(entries, list):
        raise ValueError("items must be a list")
    pairs: list[tuple[ContextItem, Vectors | None]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError("each item must be an object with 'item' and 'vector'")
        item = ContextItem.model_validate(entry.get("item"))
        encoded = entry.get("vector")
        if encoded is not None and not isinstance(encoded, str):
            raise ValueError("a vector must be base64 text or null")
        vector = None
        if encoded is not None:
            vector = np.frombuffer(base64.b64decode(encoded, validate=True), dtype="<f4")
            vector = vector.astype(np.float32)
        pairs.append((item, vector))
    return pairs


class Forwarder:
    """A replica's way to the store's committer (see the module's docstring).

    Args:
        lease: This replica's maintenance lease of the store.
        namespace: The store's namespace (the holder's route names it).
        token: A token the holder's server accepts (``None``: it runs without).
        timeout: The longest a forwarded write may take, as a local one (seconds).
    """

    def __init__(
        self, lease: MaintenanceLease, namespace: str, *, token: str | None, timeout: float
    ) -> None:
        self.lease = lease
        self.namespace = namespace
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=_CONNECT_SECONDS))
        self._found: str | None = None
        self._looked_at = -float("inf")
        self._down: tuple[str | None, float] = (None, -float("inf"))
        # Writes this replica forwarded and committed itself (the benchmark reports them).
        self.forwarded = 0
        self.fell_back = 0

    async def committer(self) -> str | None:
        """The holder's address, or ``None``: this replica commits (see ``lease``)."""
        now = time.monotonic()
        if now - self._looked_at > LOOK_EVERY:
            self._found = await anyio.to_thread.run_sync(self.lease.committer)
            self._looked_at = now
        down, since = self._down
        if self._found == down and now - since < DOWN_FOR:
            return None
        return self._found

    def _forget(self) -> None:
        self._looked_at = -float("inf")

    async def add_items(
        self, pairs: Sequence[tuple[ContextItem, Vectors | None]]
    ) -> Forwarded | None:
        """``pairs`` committed by the holder, or ``None``: commit them here."""
        return await self._send({"items": encode_pairs(pairs)}, keyed=False)

    async def add_keyed(
        self, item: ContextItem, vector: Vectors | None, key: str, fingerprint: str | None
    ) -> Forwarded | None:
        """``item`` under idempotency ``key`` committed by the holder, or ``None``.

        Raises:
            IdempotencyConflict: The holder found ``key`` claimed for another request.
            ItemForgotten: The holder found ``key``'s item forgotten.
        """
        body = {"items": encode_pairs([(item, vector)]), "key": key, "fingerprint": fingerprint}
        return await self._send(body, keyed=True)

    async def _send(self, body: dict[str, Any], *, keyed: bool) -> Forwarded | None:
        address = await self.committer()
        if address is None:
            return None
        url = address + FORWARD_PATH.format(namespace=self.namespace)
        try:
            response = await self._client.post(url, json=body, headers=self._headers)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            self._down = (address, time.monotonic())
            self._fall_back(address, f"unreachable ({type(exc).__name__})")
            return None
        except httpx.HTTPError as exc:
            self._forget()
            if keyed:  # the key's claim decides whether the holder stored it
                self._fall_back(address, f"no answer ({type(exc).__name__})")
                return None
            raise StoreError(
                f"the replica that commits this store's writes ({address}) did not answer "
                f"({type(exc).__name__}): the write may have been stored there; repeat it "
                "with an idempotency key to be sure it is stored once"
            ) from exc
        return self._answer(address, response, keyed=keyed)

    def _answer(self, address: str, response: httpx.Response, *, keyed: bool) -> Forwarded | None:
        status = response.status_code
        if status == 200:
            data = response.json()
            self.forwarded += 1
            return Forwarded(
                [ContextItem.model_validate(item) for item in data["items"]],
                bool(data["written"]),
                int(data["version"]),
            )
        text = _error_text(response)
        if status == 422 and keyed:
            raise IdempotencyConflict(text)
        if status == 410:  # the write would bring back what a forget deleted
            raise ItemForgotten(text)
        if status == 502:  # the holder's store failed the write: maybe after its commit
            self._forget()
            if keyed:
                self._fall_back(address, f"its store failed: {text}")
                return None
            raise StoreError(
                f"the replica that commits this store's writes ({address}) failed the write "
                f"({text}); it may have been stored there: repeat it with an idempotency key "
                "to be sure it is stored once"
            )
        # Not the holder any more, refused (a token it does not take), overloaded, or a
        # route it does not have (an older version): nothing was stored there.
        self._fall_back(address, f"HTTP {status}: {text}")
        return None

    def _fall_back(self, address: str, why: str) -> None:
        self._forget()
        self.fell_back += 1
        log.warning("write_not_forwarded", committer=address, why=why[:200])
        return None

    async def aclose(self) -> None:
        await self._client.aclose()


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    return str(data.get("error", ""))[:500] if isinstance(data, dict) else str(data)[:200]
