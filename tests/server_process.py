"""Start ``ralph-context serve`` as a real subprocess: over HTTP (wait until it answers), or
the parameters for a stdio client; and the owner token its clients send (every HTTP server
requires one: ``config.owner_token``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

import mcp
from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from benchmarks.serving import free_port
from ralph_context.config import Settings
from ralph_context.config import owner_token as owner_tokens

CLI = [sys.executable, "-m", "ralph_context"]
# An MCP initialize request as a raw client posts it (for probes the SDK's client cannot be).
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


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


def run_cli(
    config: Path, *arguments: str, timeout: float = 180, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``ralph-context ARGUMENTS`` on the store ``config`` names (run in its folder, or
    ``cwd``, with no stdin), to its end."""
    return subprocess.run(
        [*CLI, *arguments],
        env=environment(config),
        cwd=cwd or config.parent,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def store_config(config: Path, store: Path, *, packs: Sequence[str] = ()) -> Path:
    """Write ``config``: a ``ralph.yaml`` naming ``store`` and nothing else (but ``packs``,
    the tool packs to serve); returns it."""
    named = f"    packs: [{', '.join(packs)}]\n" if packs else ""
    config.write_text(
        f"learning:\n  mcp_context:\n    storage:\n      path: {store}\n{named}", encoding="utf-8"
    )
    return config


# Generous: on a loaded 2-core machine the server's imports and model load took over 60 s.
READY_WITHIN = 300.0


class ServerProcess(subprocess.Popen[bytes]):
    """``ralph-context serve`` with its stderr in a temporary file, not a pipe: a chatty
    server can never fill a pipe nobody reads and stall, and the log is there to read after
    :meth:`stop`."""

    log: IO[bytes]
    output = b""  # what it wrote on stdout, read by stop()

    def stop(self, *, kill: bool = False) -> str:
        """Terminate (or SIGKILL) it, wait for it, and return everything it wrote on stderr."""
        if self.poll() is None:
            if kill:
                self.kill()
            else:
                self.terminate()
        try:
            self.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()
            self.wait()
        if self.stdout is not None:
            self.output = self.stdout.read()  # the server is gone: this cannot block
            self.stdout.close()
        self.log.seek(0)
        text = self.log.read().decode(errors="replace")
        self.log.close()
        return text


def start_http_server(
    config: Path,
    *args: str,
    env: dict[str, str] | None = None,
    command: tuple[str, ...] = ("serve", "--transport", "http"),
) -> tuple[ServerProcess, str]:
    """The server on a free port, serving the store ``config`` names; returns it, once it
    said it listens (its ready line on stderr), and its URL. ``args``: more options of
    ``command`` (``ralph-context console`` serves HTTP too); ``env``: more environment
    variables. Stop it with ``ServerProcess.stop``.

    Raises:
        AssertionError: The server exited, or was not ready within ``READY_WITHIN`` (its
            stderr).
    """
    port = free_port()
    log = tempfile.TemporaryFile()
    process = ServerProcess(
        [*CLI, *command, "--port", str(port), *args],
        env={**environment(config), **(env or {})},
        cwd=config.parent,
        stdout=subprocess.PIPE,
        stderr=log,
    )
    process.log = log
    url = f"http://127.0.0.1:{port}/mcp"
    ready = re.compile(rb"^ralph-context: serving (\S+) ", re.MULTILINE)
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        exited = process.poll() is not None
        # pread: the file's offset is shared with the server, which appends at it.
        said = ready.search(os.pread(log.fileno(), os.fstat(log.fileno()).st_size, 0))
        if said is not None:
            assert said.group(1).decode().endswith(f":{port}/mcp"), said.group(0)
            return process, url
        if exited:
            raise AssertionError(process.stop())
        time.sleep(0.1)
    raise AssertionError(f"not ready within {READY_WITHIN:g} s:\n{process.stop(kill=True)}")


def stdio_server(directory: Path) -> StdioServerParameters:
    """A stdio server on a fresh store in ``directory`` (its own ``ralph.yaml``)."""
    config = directory / "ralph.yaml"
    config.write_text("learning:\n  mcp_context:\n    storage:\n      path: store\n")
    return StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve"], env=environment(config), cwd=str(directory)
    )


def owner_token(config: Path) -> str:
    """The owner token of the store ``config`` names (its server made it at start)."""
    settings = Settings.load(config)
    found = owner_tokens.read(settings.owner_token_path())
    assert found is not None, f"no owner token for {config}: was its server started?"
    return found


def owner_headers(config: Path) -> dict[str, str]:
    """``Authorization: Bearer`` with the owner token of ``config``'s store."""
    return {"Authorization": f"Bearer {owner_token(config)}"}


@asynccontextmanager
async def owner_client(url: str, config: Path) -> AsyncIterator[mcp.Client]:
    """The real MCP client of the server at ``url``, sending ``config``'s owner token."""
    async with (
        create_mcp_http_client(owner_headers(config)) as http,
        mcp.Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client
