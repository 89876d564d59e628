"""Bearer tokens for the HTTP server: where they come from, what each may reach.

A token file holds one token per line, optionally followed by the namespaces it may use
(comma-separated; none means every namespace); ``#`` starts a comment::

    3f9c...e1            # every namespace
    7a20...4d team-a,ci  # only these two

``RALPH_CONTEXT_TOKEN`` (one token, every namespace), ``server.token_file`` and the store's
owner token (``config.owner_token``: every namespace, labelled ``owner``) add to each other;
a token file that does not exist holds no tokens. Tokens are compared in constant
time, and only a digest of each is kept in memory beyond the check, so a log line or an
error never shows one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from mcp.server.auth.provider import AccessToken

from ralph_context import namespaces
from ralph_context.atomic import write_text_atomically
from ralph_context.config.owner_token import OWNER_LABEL
from ralph_context.config.token_file import ENV_TOKEN, EVERY, read_tokens
from ralph_context.errors import ConfigError

__all__ = ["ENV_TOKEN", "Grant", "TokenBook", "new_token"]

# 32 random bytes, URL-safe: 43 characters.
_TOKEN_BYTES = 32
_MIN_LENGTH = 16


@dataclass(frozen=True)
class Grant:
    """One token: a label safe to log (a digest prefix) and the namespaces it may use."""

    digest: bytes
    label: str
    namespaces: frozenset[str]

    def allows(self, namespace: str) -> bool:
        return EVERY in self.namespaces or namespace in self.namespaces


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenBook:
    """The tokens a server accepts (none: it runs without authentication)."""

    def __init__(self, grants: list[Grant]) -> None:
        self.grants = grants

    @property
    def enabled(self) -> bool:
        return bool(self.grants)

    @property
    def owner_digest(self) -> bytes | None:
        """The owner token's digest, the key of the console's one-time login links
        (``console.links``); ``None`` when the server keeps no owner token."""
        for grant in self.grants:
            if grant.label == OWNER_LABEL:
                return grant.digest
        return None

    @classmethod
    def load(
        cls,
        token_file: Path | None,
        *,
        environ: dict[str, str] | None = None,
        owner: str | None = None,
    ) -> TokenBook:
        """The tokens from ``RALPH_CONTEXT_TOKEN``, ``token_file`` and ``owner`` (the
        store's owner token, when the server keeps one).

        Raises:
            ConfigError: The file is missing, readable by others, or has a bad line.
        """
        env = os.environ if environ is None else environ
        grants: list[Grant] = []
        from_env = env.get(ENV_TOKEN, "").strip()
        if from_env:
            grants.append(_grant(from_env, frozenset({EVERY}), f"{ENV_TOKEN}"))
        if token_file is not None and token_file.exists():
            grants += _read(token_file)
        if owner is not None:
            grants.append(Grant(_digest(owner), OWNER_LABEL, frozenset({EVERY})))
        return cls(grants)

    def verify(self, token: str) -> Grant | None:
        """The grant ``token`` holds, or ``None``; every grant is compared (constant time
        across them, so timing says nothing about which one nearly matched)."""
        digest = _digest(token)
        found = None
        for grant in self.grants:
            if hmac.compare_digest(digest, grant.digest):
                found = grant
        return found

    async def verify_token(self, token: str) -> AccessToken | None:
        """The MCP SDK's ``TokenVerifier``: the grant as an access token whose scopes are
        the namespaces it may use (``*``: every one)."""
        grant = self.verify(token)
        if grant is None:
            return None
        scopes = sorted(grant.namespaces)
        return AccessToken(token=grant.label, client_id=grant.label, scopes=scopes)


def _grant(token: str, spaces: frozenset[str], where: str) -> Grant:
    if len(token) < _MIN_LENGTH:
        raise ConfigError(
            f"{where}: a token needs at least {_MIN_LENGTH} characters "
            "(`ralph-context token new` makes one)"
        )
    digest = _digest(token)
    return Grant(digest, "token-" + digest.hex()[:8], spaces)


def _read(path: Path) -> list[Grant]:
    return [_grant(found.token, found.namespaces, found.where) for found in read_tokens(path)]


def new_token(path: Path, spaces: list[str] | None = None) -> str:
    """Add a random token to the token file at ``path`` (created with mode 0600, kept so);
    returns it. ``spaces``: the namespaces it may use (default every one)."""
    for name in spaces or []:
        namespaces.check_name(name)
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    line = token if not spaces else f"{token} {','.join(spaces)}"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temp file the text goes through is created 0600 (mkstemp), and renamed over.
    write_text_atomically(path, old + line + "\n")
    return token
