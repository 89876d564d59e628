"""The process's heap: the cyclic garbage collector's full passes kept out of requests, and
glibc's allocator kept from holding memory nobody uses."""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import sys

__all__ = ["limit_malloc_arenas", "release_heap", "settle_heap"]

# mallopt's parameter number for the arena limit (glibc's malloc.h).
_M_ARENA_MAX = -8
# Arenas a process may use: one per core of this 2-core class of machine.
ARENAS = 2


def settle_heap() -> int:
    """Move every object alive now out of the collector's sight (``gc.freeze``); returns
    how many objects are frozen.

    Why: what a started engine holds (the model's session and tokenizer, the store's
    tables, the MCP server's schemas, ~250k objects) lives as long as the process, yet
    CPython's full collection walks all of it again every few seconds of serving. Each
    walk holds the GIL for 130-170 ms, and every request in flight waits it out: with 8
    HTTP clients at 100k items, the 8 calls in flight took 266-302 ms instead of ~110,
    in 4 of 5 runs (the 8-client p99). Frozen, those objects are never walked again;
    reference counting still frees them, but a cycle among them that becomes garbage
    stays until :func:`release_heap`. No collection first: it would cost every start a
    walk of the whole heap (~0.2 s in a test run); what is garbage at start (a few hundred
    objects after a model load) waits for the engine to close. Called at each engine
    start: the first freezes the process's startup objects, later ones what came since.
    """
    gc.freeze()
    frozen = gc.get_freeze_count()
    _trim()
    return frozen


def limit_malloc_arenas(arenas: int = ARENAS) -> None:
    """Let glibc's allocator use at most ``arenas`` arenas in this process, unless
    ``MALLOC_ARENA_MAX`` says otherwise. Called first thing in every process we start.

    Why: glibc gives each thread that allocates under contention an arena of its own, up to
    8 per core, and an arena keeps what was freed in it. A server runs the model's threads,
    LanceDB's runtime and the worker threads of our reads: at 100k items an engine held
    ~250 MB freed but not returned (RSS 789 MB after 900 searches); with two arenas 99 MB
    (RSS 638 MB), CPU per search unchanged (49.9 vs 50.7 ms, noise). Nothing happens on
    another C library.
    """
    libc = _glibc()
    if libc is not None and "MALLOC_ARENA_MAX" not in os.environ:
        libc.mallopt(_M_ARENA_MAX, arenas)


def _trim() -> None:
    """Give the memory freed during a start (the model load's buffers, the store's opening
    reads) back to the system (glibc's ``malloc_trim``): ~95 MB of a 100k engine's RSS."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):  # musl, or no libc.so.6: nothing to tune
        return None
    return libc


def release_heap() -> None:
    """Give every frozen object back to the collector (``gc.unfreeze``). Called when an
    engine closes: its actors, tables and sessions reference each other, and frozen they
    would never be collected (a process that opens and closes engines, a test run, would
    keep every one). Other engines still open are walked again until the next start
    freezes them."""
    gc.unfreeze()
