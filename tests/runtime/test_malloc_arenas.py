"""The processes we start limit glibc's allocator to two arenas (see runtime.heap)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's allocator (Linux) only"
)

# Threads that each allocate (glibc gives a new thread an arena of its own until the
# limit), then glibc's own report of its heaps (one per arena in use).
_CHILD = textwrap.dedent(
    """
    import ctypes, os, sys, tempfile, threading
    if sys.argv[1] == "limited":
        from ralph_context.runtime.heap import limit_malloc_arenas
        limit_malloc_arenas()
    # All six alive at once: glibc hands an exited thread's arena to the next new thread,
    # so on a fast machine threads that finished one by one shared two arenas.
    together = threading.Barrier(6)
    def work():
        kept = [bytes(100) + bytes([n % 256]) for n in range(20_000)]
        together.wait()
        del kept
    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads: t.start()
    for t in threads: t.join()
    libc = ctypes.CDLL("libc.so.6")
    libc.fopen.restype = ctypes.c_void_p
    path = tempfile.mktemp()
    stream = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    print(open(path).read().count("<heap nr="))
    os.unlink(path)
    """
)


def _heaps(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return int(done.stdout.strip().splitlines()[-1])


def test_a_process_that_limits_its_arenas_allocates_from_at_most_two() -> None:
    assert _heaps("free") > 2  # the threads did get arenas of their own unlimited
    assert _heaps("limited") <= 2
