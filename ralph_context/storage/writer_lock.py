"""One writing process per store: an exclusive lock on the store directory, and a note of
who holds it.

Two processes writing one store were neither refused nor coordinated: a storage actor
crashed on LanceDB's ``Retryable commit conflict``, and with frequent maintenance one
process's version cleanup deleted files the other still read (937 of 1,000 writes refused).
The process that opens a store for writing now holds ``writer.lock`` in it (an OS file lock:
the kernel releases it when the process ends, however it ends, so a killed writer leaves no
stale lock) and writes ``writer.json`` beside it: its PID, its command, since when, and the
MCP endpoint it serves, if any. Another process is refused with :class:`StoreLocked`, which
names the holder and how to reach it; the Ralph plugin reads the note and talks to the
holder's endpoint instead of opening the store.

Within one process the lock is shared (counted): a restarted storage actor, or a tool that
reopens the store the engine has open, is the same process and the same writer as far as
other processes are concerned. Keeping one engine per store inside a process is the
caller's duty.

A store on object storage has no lock (every function here passes it by): a file lock
cannot span the machines its replicas run on. There the replicas all write, LanceDB's
commit protocol orders their commits, and the maintenance lease (``lease``) keeps cleanup
from deleting what another replica reads.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from ralph_context._logging import get_logger
from ralph_context.atomic import write_text_atomically
from ralph_context.errors import StoreLocked
from ralph_context.object_location import Location, ObjectLocation
from ralph_context.storage.write_faults import unwritable

__all__ = [
    "HOLDER_FILE",
    "LOCK_FILE",
    "Holder",
    "acquire",
    "advertise",
    "holder",
    "other_writer",
    "release",
]

log = get_logger("ralph_context.storage")

LOCK_FILE = "writer.lock"
HOLDER_FILE = "writer.json"


@dataclass(frozen=True)
class Holder:
    """Who writes a store: ``endpoint`` is the MCP URL it serves, if it serves one."""

    pid: int
    command: str
    since: str
    endpoint: str | None = None

    def describe(self) -> str:
        """One sentence for an error message: who, and how to reach it."""
        who = f"process {self.pid} ({self.command}, since {self.since})"
        if self.endpoint:
            return (
                f"{who}, which serves it at {self.endpoint}: connect to that server "
                "(the Ralph plugin does so by itself) instead of opening the store"
            )
        return (
            f"{who}, which serves no shared endpoint: stop it, or run one shared server "
            "(`ralph-context serve --transport http`) that every client connects to"
        )


@dataclass
class _Held:
    lock: FileLock
    users: int
    note: Holder


_held: dict[Path, _Held] = {}
_guard = threading.RLock()


def acquire(location: Location) -> None:
    """Take the writer lock on the store at ``location`` for this process (again, if this
    process already holds it).

    Raises:
        StoreLocked: Another process holds it.
        StoreUnwritable: The disk refuses the lock file (a read-only mount, an immutable
            or unwritable folder): the caller owes the lock, and must take it before it
            writes (a server started on a read-only store once wrote unlocked as soon as
            the store was writable again, beside a CLI admitted as a second writer).
    """
    if isinstance(location, ObjectLocation):  # no lock there: see the module's docstring
        return
    key = _key(location)
    with _guard:
        held = _held.get(key)
        if held is not None:
            held.users += 1
            return
        key.mkdir(parents=True, exist_ok=True)
        lock = _lock(key)
        try:
            lock.acquire()
        except Timeout:
            raise StoreLocked(_refusal(key, holder(key))) from None
        except OSError as exc:
            refused = unwritable(exc, key)
            if refused is not None:
                raise refused from exc
            # A file system without OS locks (some network mounts): nothing to coordinate
            # with, and a lock file that outlives a killed writer would be worse.
            log.warning("store_not_locked", location=str(key), error=str(exc))
            return
        note = Holder(os.getpid(), _command(), datetime.now(UTC).isoformat(timespec="seconds"))
        _held[key] = _Held(lock, 1, note)
        _write_note(key, note)


def release(location: Location) -> None:
    """Give up one use of this process's lock; the last one unlocks the store."""
    if isinstance(location, ObjectLocation):  # no lock there: see the module's docstring
        return
    key = _key(location)
    with _guard:
        held = _held.get(key)
        if held is None:
            return
        held.users -= 1
        if held.users > 0:
            return
        del _held[key]
        (key / HOLDER_FILE).unlink(missing_ok=True)
        held.lock.release()


def advertise(location: Location, endpoint: str) -> None:
    """Say, in the holder's note, that this process serves the store at ``endpoint`` (an
    MCP URL). Does nothing if this process does not hold the lock."""
    if isinstance(location, ObjectLocation):  # no lock there: see the module's docstring
        return
    key = _key(location)
    with _guard:
        held = _held.get(key)
        if held is None:
            return
        held.note = replace(held.note, endpoint=endpoint)
        _write_note(key, held.note)


def holder(location: Location) -> Holder | None:
    """Who holds the store's writer lock now (this process included), or ``None``."""
    if isinstance(location, ObjectLocation):  # no lock there: see the module's docstring
        return None
    key = _key(location)
    with _guard:
        held = _held.get(key)
        if held is not None:
            return held.note
    if not (key / LOCK_FILE).exists():
        return None
    probe = _lock(key)
    try:
        probe.acquire()
    except Timeout:
        return _read_note(key)
    except OSError:
        return None
    probe.release()
    return None


def other_writer(location: Location) -> Holder | None:
    """The holder, if a process other than this one writes the store at ``location``."""
    if isinstance(location, ObjectLocation):  # no lock there: see the module's docstring
        return None
    found = holder(location)
    return found if found is not None and found.pid != os.getpid() else None


def _key(location: Path) -> Path:
    return location.expanduser().resolve()


def _lock(directory: Path) -> FileLock:
    # Not thread-local (the storage actor's threads share it), no soft fallback (a soft lock
    # survives a killed writer), and the file is kept: deleting it races another process
    # that has just opened it.
    return FileLock(
        directory / LOCK_FILE,
        blocking=False,
        thread_local=False,
        fallback_to_soft=False,
        preserve_lock_file=True,
    )


def _refusal(directory: Path, note: Holder | None) -> str:
    who = note.describe() if note else "another process, which has not said who it is yet"
    return f"the store at {directory} is open for writing by {who}"


def _write_note(directory: Path, note: Holder) -> None:
    """Write the holder's note; a disk that refuses it (full, read-only) leaves the store
    locked all the same, only unnamed: the lock is the kernel's, the note a courtesy to
    the processes refused, and a store on a full disk must still open to serve reads."""
    try:
        write_text_atomically(directory / HOLDER_FILE, json.dumps(asdict(note)) + "\n")
    except OSError as exc:
        log.warning("store_holder_not_noted", location=str(directory), error=str(exc))


def _read_note(directory: Path) -> Holder | None:
    try:
        raw = json.loads((directory / HOLDER_FILE).read_text(encoding="utf-8"))
        return Holder(
            pid=int(raw["pid"]),
            command=str(raw["command"]),
            since=str(raw["since"]),
            endpoint=str(raw["endpoint"]) if raw.get("endpoint") else None,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _command() -> str:
    """What the holder was started as, shortly (``ralph-context serve --transport``)."""
    if not sys.argv or not sys.argv[0]:
        return "python"
    program = Path(sys.argv[0])
    name = program.parent.name if program.name == "__main__.py" else program.name
    return " ".join([name, *sys.argv[1:3]])
