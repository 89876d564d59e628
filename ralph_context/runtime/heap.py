"""Keeping the cyclic garbage collector's full passes out of requests."""

from __future__ import annotations

import gc

__all__ = ["release_heap", "settle_heap"]


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
    return gc.get_freeze_count()


def release_heap() -> None:
    """Give every frozen object back to the collector (``gc.unfreeze``). Called when an
    engine closes: its actors, tables and sessions reference each other, and frozen they
    would never be collected (a process that opens and closes engines, a test run, would
    keep every one). Other engines still open are walked again until the next start
    freezes them."""
    gc.unfreeze()
