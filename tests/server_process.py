"""Start ``ralph-context serve`` as a real subprocess: over HTTP (wait until it answers), or
the parameters for a stdio client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from mcp import StdioServerParameters

CLI = [sys.executable, "-m", "ralph_context"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def environment(config: Path) -> dict[str, str]:
    # A developer's own model server or token must not reach the server under test.
    inherited = {
        key: value
        for key, value in os.environ.items()
        if key
        not in (
            "LMSTUDIO_SERVERS",
            "OLLAMA_HOST",
            "TOGETHER_API_KEY",
            "HF_TOKEN",
            "RALPH_CONTEXT_TOKEN",
        )
    }
    return {**inherited, "RALPH_CONTEXT_CONFIG": str(config)}


def store_config(config: Path, store: Path) -> Path:
    """Write ``config``: a ``ralph.yaml`` naming ``store`` and nothing else; returns it."""
    config.write_text(
        f"learning:\n  mcp_context:\n    storage:\n      path: {store}\n", encoding="utf-8"
    )
    return config


def start_http_server(
    config: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """The server on a free port, serving the store ``config`` names; returns it and its URL.
    ``args``: more ``serve`` options; ``env``: more environment variables.

    Raises:
        AssertionError: The server exited or did not answer within a minute (its stderr).
    """
    port = free_port()
    process = subprocess.Popen(
        [*CLI, "serve", "--transport", "http", "--port", str(port), *args],
        env={**environment(config), **(env or {})},
        cwd=config.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(process.communicate()[1].decode())
        try:
            httpx.get(url, timeout=0.5)
            return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError(f"the server did not answer on {url} within 60 s")


def stdio_server(directory: Path) -> StdioServerParameters:
    """A stdio server on a fresh store in ``directory`` (its own ``ralph.yaml``)."""
    config = directory / "ralph.yaml"
    config.write_text("learning:\n  mcp_context:\n    storage:\n      path: store\n")
    return StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve"], env=environment(config), cwd=str(directory)
    )
