"""One-time login links to the memory console, signed with the store's owner token.

The console's owner should not have to paste a token: ``ralph-context console`` opens a
link that logs the browser in once. Any process that can read the owner token (the owner's
own) can make one, the server that started a moment ago or one that has run for days: the
link is ``/console/login?code=<time>.<nonce>.<signature>``, the signature an HMAC keyed by
the token's SHA-256 (all the server keeps of it). The server takes a code once, within
:data:`VALID_SECONDS` of its time, and refuses it after (``Codes``).

The link never goes on a command line, which every local user can read in ``/proc``: the
browser is given a file of the owner's (mode 0600) that redirects to it, as Jupyter does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

__all__ = ["VALID_SECONDS", "Codes", "code_for", "key_of"]

# Long enough for a browser to start, short enough that a link found in a history is dead.
VALID_SECONDS = 120.0
# A code's time may be this far ahead of the server's clock (another process's clock).
_SKEW = 5.0
# Codes remembered as used at most: only the owner can make codes, so this is never
# reached but by a bug; past it, new codes are refused rather than old ones forgotten.
_MAX_USED = 1_000


def key_of(token: str) -> bytes:
    """The signing key of ``token``: its SHA-256, which the server keeps of every token."""
    return hashlib.sha256(token.encode("utf-8")).digest()


def _sign(key: bytes, stamp: str, nonce: str) -> str:
    mac = hmac.new(key, f"console-login {stamp} {nonce}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def code_for(token: str, *, now: float | None = None) -> str:
    """A fresh one-time code for the server whose owner token is ``token``."""
    stamp = str(int(time.time() if now is None else now))
    nonce = secrets.token_urlsafe(16)
    return f"{stamp}.{nonce}.{_sign(key_of(token), stamp, nonce)}"


class Codes:
    """The server's side: which codes it takes (each once).

    Args:
        key: The owner token's key (:func:`key_of`; ``TokenBook.owner_digest``).
        clock: Wall-clock seconds (tests pass their own).
    """

    def __init__(self, key: bytes, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._clock = clock
        self._used: dict[str, float] = {}

    def take(self, code: str) -> bool:
        """Whether ``code`` is valid now; it is not valid again."""
        stamp, _, rest = code.partition(".")
        nonce, _, signature = rest.partition(".")
        if not (stamp.isdigit() and nonce and signature):
            return False
        if not hmac.compare_digest(signature, _sign(self._key, stamp, nonce)):
            return False
        now = self._clock()
        age = now - int(stamp)
        if age > VALID_SECONDS or age < -_SKEW:
            return False
        self._used = {n: t for n, t in self._used.items() if now - t <= VALID_SECONDS + _SKEW}
        if nonce in self._used or len(self._used) >= _MAX_USED:
            return False
        self._used[nonce] = int(stamp)
        return True
