"""Table upkeep at the lowest CPU priority: a child process the writer hands Lance's
maintenance operations to, one at a time, and waits for.

Compaction and index refreshes are CPU-bound Rust running on Lance's thread pools; in the
writer's process they ran on the same pools, at the same priority, as the searches they were
meant to give way to (a loop's retrieval took p50 56 / p99 101 ms at 100k items while
maintenance ran beside it, against ~22 / 32 ms without). In a child started with ``nice
19`` the kernel hands the cores to the searches first; the child only uses what they leave.
Priority does not cover what two virtual cores share, so while a request is in flight the
child is also stopped outright, within bounds (``give_way``).

The child is not a second writer: the writer's storage actor sends one operation, waits for
its answer and writes nothing meanwhile (its writes queue in its inbox). Each operation opens
the dataset at its latest version and commits through Lance's own protocol; the writer then
reloads its LanceDB handle. If the child cannot be started or dies, the operation runs in the
writer's process instead (the same code, at normal priority).

Protocol: one JSON object per line each way. Request ``{"op": ..., "uri": ..., ...}``;
answer ``{"ok": true}`` or ``{"error": "..."}``.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import IO, Any

from ralph_context._logging import get_logger
from ralph_context.runtime.heap import limit_malloc_arenas
from ralph_context.storage.maintenance.give_way import GiveWay
from ralph_context.storage.private import keep_private

__all__ = [
    "DEADLINE_SECONDS",
    "NICENESS",
    "UpkeepWorker",
    "at_normal_priority",
    "hurried_when",
    "main",
    "run_operation",
    "worker",
]

log = get_logger("ralph_context.storage")

# The lowest priority a process can give itself on Linux and macOS.
NICENESS = 19
# How long one operation may take before the child is killed (and the operation fails):
# the writer waits for it, so a hung child must not hold the store's writes forever.
# Compaction after a mass delete at 1M items takes tens of seconds at worst.
DEADLINE_SECONDS = 600.0
# How often a wait for the child's answer looks whether it has given way long enough.
_LOOK_EVERY = 0.05
# A share of deleted rows past which compaction rewrites a file without them (see upkeep).
_DELETIONS_THRESHOLD = 0.5


def run_operation(request: dict[str, Any]) -> None:
    """Run one upkeep operation on the dataset at ``request["uri"]`` (in whichever process
    calls it).

    Operations: ``compact`` (optional ``deletions_threshold``: the share of deleted rows
    past which a file is rewritten without them; 0 rewrites every file holding one, as a
    scrub needs); ``optimize_indices`` (``names``, optional ``merge``: how many
    index pieces to merge into one); ``vector_index`` (``partitions``: train the vector
    column's IVF_SQ cosine index, replacing any); ``cleanup`` (``older_than_seconds``,
    ``delete_unverified``).
    """
    import lance

    dataset = lance.dataset(request["uri"], storage_options=request.get("options") or None)
    match request["op"]:
        case "compact":
            threshold = float(request.get("deletions_threshold", _DELETIONS_THRESHOLD))
            dataset.optimize.compact_files(
                materialize_deletions=True, materialize_deletions_threshold=threshold
            )
        case "optimize_indices":
            options: dict[str, Any] = {"index_names": list(request["names"])}
            if request.get("merge") is not None:
                options["num_indices_to_merge"] = int(request["merge"])
            dataset.optimize.optimize_indices(**options)
        case "vector_index":
            # LanceDB's IvfSq(distance_type="cosine", num_partitions=n): the same index,
            # named as LanceDB names it (its defaults for sampling and k-means are Lance's).
            dataset.create_index(
                "vector",
                index_type="IVF_SQ",
                metric="cosine",
                num_partitions=int(request["partitions"]),
                replace=True,
            )
        case "cleanup":
            dataset.cleanup_old_versions(
                older_than=timedelta(seconds=float(request["older_than_seconds"])),
                delete_unverified=bool(request.get("delete_unverified", False)),
            )
        case other:
            raise ValueError(f"unknown upkeep operation {other!r}")


class UpkeepWorker:
    """The child process, started on first use and kept for the process's life; thread-safe
    (one operation at a time)."""

    def __init__(self, deadline: float = DEADLINE_SECONDS) -> None:
        self.deadline = deadline
        self._lock = threading.Lock()
        # Stopped while the loop's requests are in flight (see give_way).
        self.give_way = GiveWay()
        self._process: subprocess.Popen[str] | None = None
        self._failed = False

    @property
    def running(self) -> bool:
        """True while the child is alive."""
        process = self._process
        return process is not None and process.poll() is None

    def start(self) -> None:
        """Start the child now if it is not running, without waiting for it: the writer
        calls this well before its first maintenance. Started by that maintenance, the
        child's own start (Python and Lance imported at the lowest priority, ~0.4 s of CPU
        here) came first, and the writes queued behind it: a fresh store's first maintenance
        took 360-389 ms instead of 59. Returns at once if an operation holds the child (it
        is running)."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            self._ensure()
        finally:
            self._lock.release()

    def run(self, request: dict[str, Any]) -> None:
        """Run ``request`` in the child, or here if the child is not available.

        Raises:
            RuntimeError: The operation failed (its error, from either process).
            TimeoutError: The child did not answer within ``deadline`` (it is killed; the
                next operation starts another).
        """
        hurry = _HURRY.get()
        if hurry is not None and hurry():
            run_operation(request)
            return
        with self._lock:
            answer = self._ask(request, _WAITED_ON.get() or _never)
        if answer is None:
            run_operation(request)
            return
        if "error" in answer:
            raise RuntimeError(f"upkeep {request['op']} failed: {answer['error']}")

    def _ask(self, request: dict[str, Any], waited_on: Callable[[], bool]) -> dict[str, Any] | None:
        process = self._ensure()
        if process is None:
            return None
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            self.give_way.started(process.pid)
            answered = self._answered(process.stdout, waited_on)
            line = process.stdout.readline() if answered else ""
        except OSError:  # the child is gone (a broken pipe)
            answered, line = True, ""
        finally:
            self.give_way.ended()
        if not answered:
            log.error("upkeep_worker_hung", op=request["op"], deadline=self.deadline)
            self._stop(process)
            raise TimeoutError(f"upkeep {request['op']} took over {self.deadline:g}s")
        if not line:
            log.warning("upkeep_worker_lost", returncode=process.poll())
            self._stop(process)
            return None
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _answered(self, answers: IO[str], waited_on: Callable[[], bool]) -> bool:
        """Wait for the child's answer (False past ``deadline``), letting it go on when
        it has given way long enough (give_way)."""
        deadline = time.monotonic() + self.deadline
        while (left := deadline - time.monotonic()) > 0:
            if _readable(answers, min(left, _LOOK_EVERY)):
                return True
            self.give_way.check(waited_on=waited_on())
        return False

    def _ensure(self) -> subprocess.Popen[str] | None:
        if self._process is not None:
            if self._process.poll() is None:
                return self._process
            log.warning("upkeep_worker_lost", returncode=self._process.returncode)
            self._stop(self._process)
        if self._failed:
            return None
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "ralph_context.storage.maintenance.upkeep_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
                # A group of its own: if this process dies while the child is stopped
                # (give_way), the kernel continues it and hangs it up (it ends).
                process_group=0,
            )
        except OSError as exc:
            log.warning("upkeep_worker_unavailable", error=str(exc))
            self._failed = True
            return None
        return self._process

    def _stop(self, process: subprocess.Popen[str]) -> None:
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
        if process.poll() is None:
            process.kill()
        process.wait()
        if self._process is process:
            self._process = None

    def close(self) -> None:
        """End the child (it also ends by itself when this process goes)."""
        with self._lock:
            if self._process is not None:
                self._stop(self._process)


def _readable(stream: IO[str], timeout: float) -> bool:
    """True once ``stream`` has something to read (or at once where pipes cannot be
    waited on with a timeout, as on Windows: there the read simply blocks)."""
    try:
        ready, _, _ = select.select([stream], [], [], timeout)
    except (OSError, ValueError):
        return True
    return bool(ready)


# Set by hurried_when() and at_normal_priority(): an operation runs in the calling process
# when this check is true as it starts.
_HURRY: ContextVar[Callable[[], bool] | None] = ContextVar("upkeep_hurry", default=None)
# Set by hurried_when(): true while a caller waits for the maintenance itself (give_way).
_WAITED_ON: ContextVar[Callable[[], bool] | None] = ContextVar("upkeep_waited_on", default=None)


def _never() -> bool:
    return False


@contextmanager
def hurried_when(
    check: Callable[[], bool], *, waited_on: Callable[[], bool] | None = None
) -> Iterator[None]:
    """Within the block (in this thread), each upkeep operation goes to the niced child
    unless ``check()`` is true when it starts; then it runs here, at the writer's priority.
    For maintenance begun in calm: when requests arrive meanwhile, searches starve the child
    while the writes wait for the maintenance to end (a priority inversion); the operation
    under way finishes in the child, the rest run here.

    ``waited_on``: true while a caller waits for the maintenance itself; the child then
    does not give way to requests (give_way). A request only queued is not one: an append
    is served beside the maintenance within milliseconds."""
    token, waited = _HURRY.set(check), _WAITED_ON.set(waited_on)
    try:
        yield
    finally:
        _WAITED_ON.reset(waited)
        _HURRY.reset(token)


def at_normal_priority() -> AbstractContextManager[None]:
    """Within the block (in this thread), upkeep runs here at the writer's priority, not in
    the niced child. For maintenance that cannot wait for calm: with the cores saturated by
    searches the child got almost no CPU, and the writer, which waits for each operation,
    held every write for seconds (3 namespaces of 10k, 8 clients: writes p99 2.2 s, up to
    3.9 s)."""
    return hurried_when(lambda: True)


_worker: UpkeepWorker | None = None
_worker_lock = threading.Lock()


def worker() -> UpkeepWorker:
    """The process-wide worker (one child serves every store of this process)."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = UpkeepWorker()
            atexit.register(_worker.close)
        return _worker


def _serve(requests: IO[str], answers: IO[str]) -> None:
    for line in requests:
        try:
            run_operation(json.loads(line))
            answer: dict[str, Any] = {"ok": True}
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def main() -> None:
    """The child: lowest priority, then answer operations until stdin closes (the writer
    ended, however it ended)."""
    if hasattr(os, "nice"):
        os.nice(NICENESS)
    limit_malloc_arenas()
    # The files it writes (compacted data, indexes) are the store's: owner-only.
    keep_private()
    # Before the first request, so that its answer does not wait for the import.
    import lance  # noqa: F401

    _serve(sys.stdin, sys.stdout)


if __name__ == "__main__":
    main()
