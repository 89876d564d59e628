"""Writes the disk refuses: which failures they are, and whether the disk takes writes again.

A full disk, a folder made unwritable or a failing device makes every write fail, while
every file already written stays readable. Told apart from a bug or a broken store by the
operating system's error number, the store can then be served read-only instead of
crashing (the storage actor restarting over and over took reads down with it). LanceDB and
Lance raise such failures from Rust, as ``OSError`` or ``RuntimeError`` with the number
only in the message (``No space left on device (os error 28)``), so it is looked for there
too, along the exception's causes.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from ralph_context.errors import StoreUnwritable
from ralph_context.object_location import Location

__all__ = ["PROBE_BYTES", "probe", "unwritable"]

# What a person is told first, by error number.
_HEADLINES = {
    errno.ENOSPC: "store is full",
    errno.EDQUOT: "store is full",
    errno.EACCES: "store is not writable",
    errno.EPERM: "store is not writable",
    errno.EROFS: "store is read-only",
    errno.EIO: "store could not be written",
}
# An error number inside a message: Rust's ``std::io::Error`` ("(os error 28)"), Arrow's
# and Python's ("[Errno 28]").
_NUMBER = re.compile(r"\(os error (\d+)\)|\[errno (\d+)\]", re.IGNORECASE)
# Causes followed from the error raised (a chain is short; a cycle must not loop).
_DEPTH = 8
# Bytes a probe writes: a store's smallest write (a few items, a manifest) is well under
# it, so a disk that takes the probe takes the write that follows.
PROBE_BYTES = 256 * 1024


def unwritable(error: BaseException, location: Location | None) -> StoreUnwritable | None:
    """The :class:`StoreUnwritable` ``error`` amounts to, or ``None`` when it is another
    failure (a bug, bad data, a lost connection). Only a store on a local disk has one.
    The errors of a task group (a maintenance runs in one) are looked through too."""
    if not isinstance(location, Path):
        return None
    number = _found(error, _DEPTH)
    if number is None:
        return None
    return StoreUnwritable(_HEADLINES[number], os.strerror(number), str(location))


def _found(error: BaseException | None, depth: int) -> int | None:
    """The first error number of :data:`_HEADLINES` in ``error``, its causes and, for a
    group, its members."""
    if error is None or depth <= 0:
        return None
    number = _number(error)
    if number in _HEADLINES:
        return number
    if isinstance(error, BaseExceptionGroup):
        for member in error.exceptions:
            if (inner := _found(member, depth - 1)) is not None:
                return inner
    return _found(error.__cause__ or error.__context__, depth - 1)


def _number(error: BaseException) -> int | None:
    if isinstance(error, OSError) and error.errno is not None:
        return error.errno
    found = _NUMBER.search(str(error))
    if found is None:
        return None
    return int(found.group(1) or found.group(2))


def probe(location: Path) -> None:
    """Write :data:`PROBE_BYTES` to a file in the store's folder, to the disk (``fsync``:
    some file systems report a full disk only then), and remove it.

    Raises:
        OSError: The disk refused (the store stays read-only).
    """
    path = location / f".write-probe-{os.getpid()}"
    try:
        with path.open("wb") as file:
            # Random bytes: a compressing file system would store zeros in a few blocks.
            file.write(os.urandom(PROBE_BYTES))
            file.flush()
            os.fsync(file.fileno())
    finally:
        path.unlink(missing_ok=True)
