"""The upkeep child gives way to the loop's requests: it is stopped while one is in flight.

Maintenance runs in a child at the lowest CPU priority (``upkeep_worker``), yet a search
that overlapped a compaction or an index merge there still took ~10 ms more (the 100k loop
of ``bench latency``: p50 35-37 ms against 26-27 for the others): two virtual cores share
caches, memory bandwidth and the host's hyperthreads, which no priority governs. So the
child is stopped (``SIGSTOP``) while a foreground request is in flight and continued
(``SIGCONT``) when none is: measured on the same loop, the searches that overlapped
maintenance took p50 27-31 ms, and the loop's retrieval p99 went from 49-60 to 40-55 ms
(median 45 over thirteen runs; docs/benchmarks.md, "Stop 56").

It is never stopped for long: after :data:`MAX_PAUSE` seconds within one run of requests
it goes on until the requests have all ended (a steady stream of requests cannot starve
it), and it is not stopped while a caller waits for the maintenance itself (``waited_on``,
from ``upkeep_worker.hurried_when``: the writer then needs the child's answer). If this
process dies while the child is stopped, the kernel sends the child's process group, now
orphaned, SIGHUP then SIGCONT: the child is started in a group of its own for that
(``upkeep_worker``), and it ends.
"""

from __future__ import annotations

import os
import signal
import threading
import time

__all__ = ["MAX_PAUSE", "GiveWay"]

# The longest the child stays stopped within one run of requests (seconds).
MAX_PAUSE = 0.5

_STOP = getattr(signal, "SIGSTOP", None)  # POSIX only: elsewhere the child never stops
_CONT = getattr(signal, "SIGCONT", None)


class GiveWay:
    """Stops and continues the upkeep child as foreground requests start and end;
    thread-safe (requests start and end on the event loop, operations are awaited in a
    worker thread)."""

    def __init__(self, max_pause: float = MAX_PAUSE) -> None:
        self.max_pause = max_pause
        self._lock = threading.Lock()
        self._busy = 0  # engines with a foreground request in flight
        self._pid: int | None = None  # the child, while it runs an operation
        self._stopped_at: float | None = None
        self._waived = False  # stopped long enough in this run of requests

    def busy(self, active: bool) -> None:
        """A foreground (one engine's) went busy (``True``) or idle (``False``)."""
        with self._lock:
            self._busy = max(0, self._busy + (1 if active else -1))
            if self._busy:
                self._stop()
            else:
                self._waived = False
                self._continue()

    def started(self, pid: int) -> None:
        """The child ``pid`` was handed an operation (stopped at once if requests are in
        flight)."""
        with self._lock:
            self._pid = pid
            if self._busy:
                self._stop()

    def check(self, *, waited_on: bool) -> None:
        """Called while the operation is awaited: continue the child once it has been
        stopped for ``max_pause``, or at once when a caller waits for the maintenance
        (``waited_on``)."""
        with self._lock:
            since = self._stopped_at
            if since is not None and (waited_on or time.monotonic() - since >= self.max_pause):
                self._waived = True
                self._continue()

    def ended(self) -> None:
        """The operation is answered (or the child is gone)."""
        with self._lock:
            self._continue()
            self._pid = None

    @property
    def stopped(self) -> bool:
        """True while the child is stopped."""
        return self._stopped_at is not None

    def _stop(self) -> None:
        if self._pid is None or self._stopped_at is not None or self._waived or _STOP is None:
            return
        if _signal(self._pid, _STOP):
            self._stopped_at = time.monotonic()

    def _continue(self) -> None:
        if self._pid is None or self._stopped_at is None or _CONT is None:
            return
        self._stopped_at = None
        _signal(self._pid, _CONT)


def _signal(pid: int, number: int) -> bool:
    """Signal the child; False if it is gone (the operation then fails on its own)."""
    try:
        os.kill(pid, number)
    except OSError:
        return False
    return True
