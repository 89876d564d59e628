"""Server processes the benchmarks (and the object-storage tests) start: a free loopback
port for one, waiting until it serves, the owner token its clients send (every HTTP server
requires one, ``config.owner_token``), the CPU it has used and the memory it holds."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx

__all__ = ["cpu_seconds", "free_port", "owner_token_of", "rss_bytes", "wait_until_serving"]


def owner_token_of(config: Path) -> str:
    """The owner token the server of ``config``'s store made at its start (what the
    project's own clients send; the benchmarks' clients send it too).

    Raises:
        RuntimeError: There is none (the server has not started).
    """
    from ralph_context.config import Settings, owner_token

    found = owner_token.read(Settings.load(config).owner_token_path())
    if found is None:
        raise RuntimeError(f"no owner token for the store of {config}")
    return found


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_serving(url: str, process: subprocess.Popen[bytes], seconds: float = 120) -> None:
    """Return once ``url`` answers any HTTP request.

    Raises:
        RuntimeError: ``process`` exited, or nothing answered within ``seconds``.
    """
    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.TransportError:
            if process.poll() is not None:
                raise RuntimeError(f"the server for {url} exited ({process.returncode})") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing answered at {url} within {seconds:g} s") from None
            time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU seconds so far (Linux).

    Raises:
        OSError: No such process (or no /proc).
    """
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    """A process's resident memory now (Linux).

    Raises:
        OSError: No such process (or no /proc).
    """
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise OSError(f"process {pid} reports no resident memory")
