"""The store's own secret, and the keyed digests made with it.

What the store must recognise again without keeping it (a client's idempotency key, the text
of an item it forgot) is kept as an HMAC-SHA256 under a key of this store: a plain digest of a
guessed secret (a ``ghp_`` token used as an idempotency key, a forgotten password) could be
checked against the store's files by anyone holding them, and one computed table would serve
every store. The key is 32 random bytes in ``store.key`` beside the tables (0600 in the
store's 0700 folder; on object storage one object, created only if absent, so replicas agree
on the first one written). A store in memory gets a key for the process's lifetime.

A read-only open of a store written before the key existed has none to read, and makes none:
its keys table, written by that older version, holds no digest to compare with either.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from ralph_context.object_location import Location, ObjectLocation, read_text, write_text

__all__ = ["KEY_FILE", "StoreKey"]

KEY_FILE = "store.key"
_BYTES = 32


class StoreKey:
    """Keyed digests under one store's secret (see the module's docstring)."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    @classmethod
    def of(cls, location: Location | None, *, read_only: bool = False) -> StoreKey:
        """The key of the store at ``location``, made and kept there first if it has none
        (not when ``read_only``: then a key of this process's own, which matches nothing
        stored).

        Raises:
            OSError: The key could not be read or written.
        """
        if location is None:
            return cls(secrets.token_bytes(_BYTES))
        found = read_text(location, KEY_FILE)
        if found is None and not read_only:
            made = secrets.token_hex(_BYTES)
            if isinstance(location, ObjectLocation):
                # Created only if absent: two replicas starting at once keep the first.
                location.write(KEY_FILE, made.encode("ascii"), replacing="")
            else:
                write_text(location, KEY_FILE, made)  # mkstemp's 0600, renamed in place
            found = read_text(location, KEY_FILE)
        if found is None:
            return cls(secrets.token_bytes(_BYTES))
        return cls(bytes.fromhex(found.strip()))

    def digest(self, kind: str, text: str) -> str:
        """The keyed digest of ``text`` as a ``kind`` (so that a key and a content equal as
        text never share a digest), hex."""
        message = f"{kind}\x00{text}".encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()
