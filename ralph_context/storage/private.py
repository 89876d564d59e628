"""The store's files are its owner's alone: directories 0700, files 0600.

A memory holds what a loop saw (commands, output, errors, config files), credentials
among them. Lance writes the data, index, deletion and manifest files itself (Rust's
``object_store``), with the default modes less the process's umask: 0644 under 0755 at the
usual umask of 022. Measured (Lance 0.40 / pylance 13): with a umask of 077 every file
it writes is 0600 and every directory 0700; Lance sets no mode of its own.

So two layers:

- :func:`keep_private` sets the umask to 077 in the processes that write a store and run
  only our code: the server (``serve``), the CLI commands that open a store
  (``engine_for``) and the upkeep child. The umask is process-wide; there it only covers
  files holding the memory (the store, its logs, an export, which holds it too).
- :func:`secure` makes the store's own folder 0700 when a writer opens it, and tightens
  anything under it that is looser (a store written before this, or by a library host
  whose umask we do not change): the folder alone keeps other users out of everything
  beneath, whatever each file's mode. ``Engine`` embedded in another program does not
  touch that program's umask (another thread of the host could be creating files at that
  moment), so new files there follow the host's umask, under the 0700 folder.

On object storage there are no modes: the bucket's policy is the access control.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ralph_context._logging import get_logger

__all__ = ["DIRECTORY_MODE", "FILE_MODE", "PRIVATE_UMASK", "keep_private", "secure"]

log = get_logger("ralph_context.storage")

PRIVATE_UMASK = 0o077
DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
# Bits nobody but the owner may hold on anything under a store.
_OTHERS = stat.S_IRWXG | stat.S_IRWXO
# What a store folder holds besides its tables (``*.lance``): the archive database, the
# other namespaces, the model record, the writer lock's files and the HTTP server's owner
# token (``config.owner_token``); and, not marks, the store's key (``store_key``) and an
# unfinished forget's plan (``store_forget``).
_STORE_MARKS = frozenset(
    {"context_items.lance", "store.json", "writer.json", "writer.lock", "owner.token"}
)
_STORE_ENTRIES = _STORE_MARKS | {"archives", "namespaces", "store.key", "forget.pending"}


def keep_private() -> None:
    """Create every file of this process owner-only from now on (umask 077). For
    processes of ours that write a store; never called inside a host's process."""
    os.umask(PRIVATE_UMASK)


def secure(folder: Path) -> None:
    """Create ``folder`` (0700) if missing; if it holds a store (or nothing yet), take group
    and other access away from it and from the store's own entries in it (its tables,
    archive and namespaces) where they have some. Nothing else in the folder is touched:
    a store configured at a folder of other things (a project root) must not change their
    modes. A path that cannot be changed (another owner's, a read-only mount) is left as
    it is and logged: the store still opens.

    A walk of the store's entries: ~1 ms per 100 files (a store holds hundreds after
    compaction), once per open.
    """
    folder.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    children = list(folder.iterdir())
    ours = [child for child in children if _is_store_entry(child.name)]
    if children and not any(child.name in _STORE_MARKS for child in ours):
        return  # not a store folder: leave it as its owner set it
    failed = 0
    for path in (folder, *ours, *(p for entry in ours for p in _tree(entry))):
        try:
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not mode & _OTHERS:
                continue
            path.chmod(DIRECTORY_MODE if stat.S_ISDIR(mode) else FILE_MODE)
        except OSError:  # gone meanwhile, or not ours
            failed += 1
    if failed:
        log.warning("store_modes_not_tightened", location=str(folder), paths=failed)


def _is_store_entry(name: str) -> bool:
    return name.endswith(".lance") or name in _STORE_ENTRIES


def _tree(entry: Path) -> list[Path]:
    """Everything under ``entry`` (nothing for a file)."""
    found: list[Path] = []
    for parent, directories, files in os.walk(entry):
        base = Path(parent)
        found.extend(base / name for name in (*directories, *files))
    return found
