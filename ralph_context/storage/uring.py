"""Searches read a local store through Lance's io_uring reader, on a handle of their own.

Lance reads a local file with a ``pread`` handed to tokio's blocking pool: every read of a
search wakes one of dozens of pool threads and waits for it, and on two cores those
hand-offs cost more than the reads (a 100k-item search's CPU was a quarter kernel
scheduling, a tenth allocator). Opened as ``file+uring://``, Lance submits the same reads to
an io_uring served by two threads of its own. Measured on this 2-core machine at 100k
items, a vector top-40 and a full-text top-20 query, 300 pairs: 15-16 ms of CPU and 28-30 ms
wall per pair through the pool, 9-11 ms and 12-16 ms through io_uring (alternating runs,
load ~4).

Only reads go this way. Lance gives ``file+uring`` the commit handler of an unknown scheme,
which is not safe beside another writer (the upkeep worker commits compactions while the
server appends), so the store's own handle (``file://``) makes every write and the search
handle only follows it: before each query it is checked out at the writer's version (read
in memory; a checkout reads one manifest, only after a write). Off where the kernel refuses
io_uring (a container's seccomp profile, an old kernel, another OS) or its first read fails:
searches then use the store's handle, as before. ``storage.io_uring: false`` turns it off.

Lance's io_uring threads wait for completions in 10 ms polls by default, ~4 ms of CPU a
second while idle; 100 ms (:data:`POLL_MS`, unless ``LANCE_URING_POLL_TIMEOUT_MS`` is set)
costs ~0.7 ms a second and measured no slower.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import os
import sys
from pathlib import Path
from typing import Any

import lancedb
from lancedb.background_loop import LOOP
from lancedb.table import AsyncTable

from ralph_context._logging import get_logger
from ralph_context.storage.reads import async_table

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

    def __init__(self, reader: AsyncTable) -> None:
        self.reader = reader
        self._version: int | None = None
        # Reads from several threads meet on LanceDB's one event loop: one looks and checks
        # out at a time, so a slower checkout of an older version never lands after a newer.
        self._moving = asyncio.Lock()

    async def at(self, writer: AsyncTable) -> AsyncTable:
        """The reader, at ``writer``'s current version (checked out when it moved on)."""
        async with self._moving:
            version = await writer.version()
            if version != self._version:
                await self.reader.checkout(version)
                self._version = version
        return self.reader

    def prewarm_index(self, name: str) -> None:
        LOOP.run(self.reader.prewarm_index(name))  # type: ignore[no-untyped-call]


def open_search_table(
    folder: Path, name: str, *, session: Any, options: dict[str, str]
) -> SearchTable | None:
    """Table ``name`` of the store in ``folder`` opened through io_uring for searches, or
    ``None`` where the kernel refuses it or a first read through it fails."""
    if not kernel_allows():
        log.info("io_uring_unavailable", reason="the kernel refused io_uring_setup")
        return None
    os.environ.setdefault("LANCE_URING_POLL_TIMEOUT_MS", POLL_MS)
    try:
        db = lancedb.connect(uring_uri(folder), storage_options=options, session=session)
        table = db.open_table(name)
        table.search().limit(1).to_arrow()
        reader = async_table(table)
    except Exception as exc:  # any failure: searches keep the store's own handle
        log.warning("io_uring_unavailable", reason=f"{type(exc).__name__}: {exc}"[:300])
        return None
    return SearchTable(reader)
