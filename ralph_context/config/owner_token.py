"""The store's owner token: what keeps other local users out of a loopback server.

A loopback port is open to every account of the machine, and the store's 0600 files do not
help once a server reads them for whoever connects: another uid read an item and forgot it
through the token-less default. So a server reachable over HTTP creates, at its first start,
one random token in ``owner.token`` (mode 0600, in the store's own 0700 folder:
``Settings.owner_token_path``) and requires it (or a configured token) on every route. The
owner's own processes read the file: the agents' hooks through the server's note, the CLI
beside a server, the stdio bridge, the Ralph hooks, a replica forwarding a write. Another
uid cannot read it, so it is refused.

A token rather than a unix socket: MCP clients configured by URL (Cursor, Claude Code's
``http`` entries), the console in a browser and replicas on other machines all speak TCP,
so the token is needed anyway; reading it costs a hook about 0.03 ms of its 250.

The file is created atomically (written to a temporary file, then linked into place: the
first of two servers starting at once wins, the other reads its token) and refused when it
is not the user's own regular file, owner-only, in a folder no one else may write: a file
others could read may have been read, one in a folder others can write may be replaced.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ralph_context.config.token_file import OWNER_FILE, token_for
from ralph_context.errors import ConfigError

if TYPE_CHECKING:
    from ralph_context.config.settings import Settings

__all__ = ["OWNER_FILE", "OWNER_LABEL", "client_token", "ensure", "forward_token", "read"]

# How a request holding it is named in logs and audit lines.
OWNER_LABEL = "owner"
# 32 random bytes, URL-safe: 43 characters (as ``token new`` makes them).
_TOKEN_BYTES = 32
_MIN_LENGTH = 16
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def ensure(path: Path) -> str:
    """The owner token at ``path``, created (mode 0600, its folder 0700 if new) when there
    is none.

    Raises:
        ConfigError: The file or its folder is not safe (see :func:`read`), or cannot be
            written.
    """
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"owner token {path}: cannot create its folder ({exc})") from None
    found = read(path)
    if found is not None:
        return found
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{OWNER_FILE}.")  # 0600
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(token + "\n")
            try:
                os.link(temporary, path)  # fails when another process made one first
            except FileExistsError:
                pass
        finally:
            os.unlink(temporary)
    except OSError as exc:
        raise ConfigError(f"owner token {path}: cannot write it ({exc})") from None
    made = read(path)
    if made is None:
        raise ConfigError(f"owner token {path}: it vanished as it was created")
    return made


def read(path: Path) -> str | None:
    """The owner token at ``path``; ``None`` when there is no file.

    Raises:
        ConfigError: It is not this user's regular file with mode 0600 (or stricter), its
            folder is another user's or writable by others, or it holds no token.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"owner token {path}: cannot read it ({exc.strerror})") from None
    with os.fdopen(descriptor, encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        _check(path, info)
        text = handle.read(4096)
    token = text.strip()
    if len(token) < _MIN_LENGTH or any(c.isspace() for c in token):
        raise ConfigError(f"owner token {path}: holds no token; delete it to make a new one")
    return token


def _check(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        raise ConfigError(f"owner token {path}: not a file of this user's")
    if info.st_mode & 0o077:
        raise ConfigError(
            f"owner token {path} can be read by other users (mode {info.st_mode & 0o777:o}): "
            f"delete it (a server makes a new one) or run `chmod 600 {path}`"
        )
    folder = os.stat(path.parent)
    if folder.st_uid not in (os.getuid(), 0) or folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(
            f"owner token {path}: its folder can be written by other users, who could "
            f"replace it; run `chmod 700 {path.parent}`"
        )


def client_token(settings: Settings, url: str | None = None) -> str | None:
    """The token a client of ``settings``' store sends to its server at ``url`` (``None``:
    a server of this store on this machine): the owner token when the server keeps one
    (``server.owner_token``), the URL is loopback and the file is there and safe; else
    ``RALPH_CONTEXT_TOKEN`` or the token file's first token for the namespace; ``None``
    when there is none. Never raises: a client without a token is refused by the server,
    which says why. (The owner token never goes to another machine.)"""
    host = "127.0.0.1" if url is None else (urlsplit(url).hostname or "")
    if settings.server.owner_token and host in _LOOPBACK:
        try:
            found = read(settings.owner_token_path())
        except ConfigError:
            found = None
        if found is not None:
            return found
    try:
        return token_for(settings.token_path(), settings.storage.namespace)
    except ConfigError:
        return None


def forward_token(settings: Settings) -> str | None:
    """The token a replica on object storage sends with a write it forwards to the lease
    holder: a configured one first (the replicas of other machines share it), else the
    owner token (this project's own replicas).

    Raises:
        ConfigError: The token file is unsafe or malformed.
    """
    return token_for(settings.token_path(), settings.storage.namespace) or client_token(settings)
