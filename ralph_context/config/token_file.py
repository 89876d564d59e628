"""The server's token file read as text: each token with the namespaces it grants.

Both sides of a store's replicas need it: the HTTP server checks the tokens it is sent
(``server.tokens`` keeps only their digests), and a replica sends one of them when it
forwards a write to the replica that commits the store's writes (``storage.replicas.forwarding``),
which reads the same file (replicas share their settings). A token is never logged or put
in an error: errors name the file and line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ralph_context import namespaces
from ralph_context.errors import ConfigError

__all__ = ["ENV_TOKEN", "EVERY", "OWNER_FILE", "FileToken", "read_tokens", "token_for"]

ENV_TOKEN = "RALPH_CONTEXT_TOKEN"
# The store's owner token, in the store's folder (``owner_token``); here, below both the
# settings that name its path and the module that makes it.
OWNER_FILE = "owner.token"
EVERY = "*"


@dataclass(frozen=True)
class FileToken:
    """One line of the file: the token, what it grants, and where it was read."""

    token: str
    namespaces: frozenset[str]
    where: str


def read_tokens(path: Path) -> list[FileToken]:
    """Every token of the file at ``path``.

    Raises:
        ConfigError: The file cannot be read, is readable by others, or has a bad line.
    """
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"server.token_file {path}: cannot read it ({exc.strerror})") from None
    if mode & 0o077:
        raise ConfigError(
            f"server.token_file {path} can be read by other users (mode {mode & 0o777:o}); "
            f"run `chmod 600 {path}`"
        )
    tokens = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{number}"
        if len(words) > 2:
            raise ConfigError(
                f"{where}: expected '<token> [namespace,...]', got {len(words)} words"
            )
        spaces = frozenset({EVERY})
        if len(words) == 2:
            names = [n for n in words[1].split(",") if n]
            for name in names:
                if not namespaces.is_name(name):
                    raise ConfigError(f"{where}: namespace {name!r} is not a valid name")
            spaces = frozenset(names)
        tokens.append(FileToken(words[0], spaces, where))
    return tokens


def token_for(
    token_file: Path, namespace: str, *, environ: dict[str, str] | None = None
) -> str | None:
    """A token that grants ``namespace``: ``RALPH_CONTEXT_TOKEN``, else the file's first
    one that does; ``None`` when there is none (the servers run without tokens)."""
    env = os.environ if environ is None else environ
    from_env = env.get(ENV_TOKEN, "").strip()
    if from_env:
        return from_env
    if not token_file.exists():
        return None
    for found in read_tokens(token_file):
        if EVERY in found.namespaces or namespace in found.namespaces:
            return found.token
    return None
