"""Waiting for a server process the benchmarks (and the object-storage tests) started."""

from __future__ import annotations

import subprocess
import time

import httpx

__all__ = ["wait_until_serving"]


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
