"""Every way of serving a store another process holds is refused in one line, naming the
holder: no traceback (the HTTP server's refusal once came wrapped in a task group's
ExceptionGroup, 280 lines of it)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.storage.test_writer_lock import _hold

ENTRY_POINTS = {
    "serve over stdio": ["serve"],
    "serve over HTTP": ["serve", "--transport", "http", "--port", "{port}"],
    "console": ["console", "--no-browser", "--port", "{port}"],
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_every_server_entry_point_refuses_a_held_store_in_one_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    config = tmp_path / "ralph.yaml"
    config.write_text(f"learning:\n  mcp_context:\n    storage:\n      path: {store}\n")
    holder = _hold(store)
    try:
        # All at once: each loads the model before it meets the lock (~3 s apiece).
        running = {
            name: subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ralph_context",
                    *(part.format(port=_free_port()) for part in arguments),
                    "--config",
                    str(config),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name, arguments in ENTRY_POINTS.items()
        }
        for name, process in running.items():
            _out, err = process.communicate(timeout=120)
            errors = [line for line in err.splitlines() if line.startswith("error:")]
            assert process.returncode == 1, (name, err)
            assert "Traceback" not in err, (name, err)
            assert len(errors) == 1, (name, err)
            assert f"open for writing by process {holder.pid}" in errors[0], (name, err)
    finally:
        holder.kill()
        holder.communicate()
