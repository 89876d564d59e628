"""One Ctrl-C stops ``serve``: over stdio while its client still holds stdin open, and over
HTTP, each saying so and exiting 0 with no traceback (``server.interrupt``).

The waits are bounded at the 2 s a person gives a Ctrl-C: a bound on a wait, not a timing
of how fast it stops (that is ``stopped (Ctrl-C) in ... s`` on the server's stderr).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.server_process import (
    CLI,
    INITIALIZE,
    READY_WITHIN,
    ServerProcess,
    environment,
    start_http_server,
    store_config,
)

# What a person waits after one Ctrl-C before pressing it again.
STOPS_WITHIN = 2.0


def _stopped_by_one_sigint(process: ServerProcess) -> str:
    process.send_signal(signal.SIGINT)
    try:
        code = process.wait(timeout=STOPS_WITHIN)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still serving {STOPS_WITHIN:g} s after one SIGINT") from None
    finally:
        log = process.stop(kill=True)
    assert code == 0, log
    assert "ralph-context: stopping (Ctrl-C)" in log, log
    assert re.search(r"ralph-context: stopped \(Ctrl-C\) in \d+\.\d s", log), log
    assert "Traceback" not in log, log
    return log


def test_one_sigint_stops_a_stdio_server_whose_client_keeps_stdin_open(tmp_path: Path) -> None:
    config = store_config(tmp_path / "ralph.yaml", tmp_path / "store")
    log = tempfile.TemporaryFile()
    process = ServerProcess(
        [*CLI, "serve"],
        env=environment(config),
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
    )
    process.log = log
    assert process.stdin is not None and process.stdout is not None
    deadline = time.monotonic() + READY_WITHIN
    while b"waiting for an MCP client" not in os.pread(log.fileno(), 1 << 20, 0):
        assert process.poll() is None, process.stop()
        assert time.monotonic() < deadline, process.stop(kill=True)
        time.sleep(0.1)
    # A session under way: the client's initialize is answered, and stdin stays open.
    process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    process.stdin.flush()
    answer = json.loads(process.stdout.readline())
    assert answer["id"] == 1 and "serverInfo" in answer["result"], answer

    _stopped_by_one_sigint(process)
    process.stdin.close()


def test_one_sigint_stops_an_http_server(tmp_path: Path) -> None:
    config = store_config(tmp_path / "ralph.yaml", tmp_path / "store")
    process, _url = start_http_server(config)

    log = _stopped_by_one_sigint(process)
    assert "console http://" in log
