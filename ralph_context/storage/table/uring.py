"""Searches read a local store through Lance itself, on a handle of their own.

The handle is a ``lance.LanceDataset`` (pylance, pinned with LanceDB), not a second LanceDB
table: LanceDB's Python query API runs each query on its background event loop and, before
it, looks the table's schema up for blob columns this store does not have; on two cores those
hand-offs cost more than the query. Measured at 100k items, 200 LoCoMo questions, CPU per
query through LanceDB's async table -> the dataset's scanner: vector top-40 (row ids) 2.1 ->
1.2 ms, full-text top-20 1.8 -> 0.8, the neighbours' ``sequence IN`` 2.3 -> 0.4.

It reads through Lance's io_uring reader where the kernel allows it. Lance reads a local
file with a ``pread`` handed to tokio's blocking pool: every read of a search wakes one of
dozens of pool threads and waits for it, and on two cores those hand-offs cost more than
the reads. Opened as ``file+uring://``, Lance submits the same reads to an io_uring served
by two threads of its own (whole rows, 100k items: vector top-40 4.2 -> 2.6 ms of CPU,
full-text top-20 2.6 -> 1.8). Where the kernel refuses io_uring (a container's seccomp
profile, an old kernel, another OS), its first read fails, or ``storage.io_uring`` is off,
the handle reads the plain path.

Only reads go this way. Lance gives ``file+uring`` the commit handler of an unknown scheme,
which is not safe beside another writer (the upkeep worker commits compactions while the
server appends), so the store's own handle (``file://``) makes every write and the search
handle only follows it: before each query it is checked out at the writer's version (read
in memory; a checkout reads one manifest, only after a write). Its caches are its own
session's, sized as the store's (``caches``): the searches fill this one, not the writer's.

Lance's io_uring threads wait for completions in 10 ms polls by default, ~4 ms of CPU a
second while idle; 100 ms (:data:`POLL_MS`, unless ``LANCE_URING_POLL_TIMEOUT_MS`` is set)
costs ~0.7 ms a second and measured no slower.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
from pathlib import Path
from typing import Any

import lance
from lance.lance import _Session as LanceSession

from ralph_context._logging import get_logger

__all__ = ["POLL_MS", "SearchTable", "kernel_allows", "open_search_table", "uring_uri"]

log = get_logger("ralph_context.storage")

POLL_MS = "100"
# io_uring_setup's number in the generic syscall table (x86-64 and arm64 alike).
_IO_URING_SETUP = 425
_PARAMS_BYTES = 120  # struct io_uring_params


@functools.cache
def kernel_allows() -> bool:
    """Whether this process may set up an io_uring (tried once: a one-entry ring, closed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        params = ctypes.create_string_buffer(_PARAMS_BYTES)
        fd = int(libc.syscall(_IO_URING_SETUP, 1, params))
    except (OSError, AttributeError):
        return False
    if fd < 0:
        return False
    os.close(fd)
    return True


def uring_uri(path: Path) -> str:
    """``path`` as a ``file+uring://`` URI, percent-encoded (a raw ``#`` or ``%`` in a folder
    name would be read as URI syntax)."""
    return "file+uring" + path.resolve().as_uri().removeprefix("file")


class SearchTable:
    """The search handle of one table, kept at its writer's version."""

    def __init__(self, dataset: lance.LanceDataset, *, io_uring: bool) -> None:
        self._dataset = dataset
        self.io_uring = io_uring  # read through io_uring, else the plain path
        # Reads from several threads: one looks and checks out at a time, so a slower
        # checkout of an older version never lands after a newer one.
        self._moving = threading.Lock()

    def at(self, writer: Any) -> lance.LanceDataset:
        """The dataset at ``writer``'s current version (checked out when it moved on);
        ``writer`` is the store's own LanceDB table, whose version is kept in memory."""
        with self._moving:
            version = int(writer.version)
            if version != self._dataset.version:
                self._dataset = self._dataset.checkout_version(version)
            return self._dataset

    def prewarm_index(self, name: str) -> None:
        self._dataset.prewarm_index(name)


def open_search_table(
    folder: Path, name: str, *, session: LanceSession, io_uring: bool = True
) -> SearchTable | None:
    """Table ``name`` of the store in ``folder`` opened for searches: through io_uring when
    ``io_uring`` and the kernel allow it and a first read works, else on the plain path;
    ``None`` if neither opens (searches then keep the store's own handle)."""
    path = folder / f"{name}.lance"
    if io_uring and not kernel_allows():
        log.info("io_uring_unavailable", reason="the kernel refused io_uring_setup")
    elif io_uring:
        os.environ.setdefault("LANCE_URING_POLL_TIMEOUT_MS", POLL_MS)
        try:
            return _opened(uring_uri(path), session, io_uring=True)
        except Exception as exc:  # any failure: the plain path
            log.warning("io_uring_unavailable", reason=f"{type(exc).__name__}: {exc}"[:300])
    try:
        return _opened(str(path), session, io_uring=False)
    except Exception as exc:  # any failure: searches keep the store's own handle
        log.warning("search_handle_unavailable", reason=f"{type(exc).__name__}: {exc}"[:300])
        return None


def _opened(uri: str, session: LanceSession, *, io_uring: bool) -> SearchTable:
    dataset = lance.dataset(uri, session=session)
    dataset.scanner(limit=1).to_table()
    return SearchTable(dataset, io_uring=io_uring)
