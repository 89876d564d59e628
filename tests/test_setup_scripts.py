"""The README's main-job command, ``bash .ci/serve``: it sets up what serving needs and
serves on stdio, with no dev tool, npm, apt or chromium called (each is a command on
``PATH`` here that fails loudly). Run on this checkout, whose set-up is done, so the install
step is "up to date"; a fresh venv's ``pip install .`` serving is ``test_wheel_install``'s.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.server_process import INITIALIZE, environment, store_config

REPO = Path(__file__).resolve().parents[1]
# What the main job must not need: the test bench's tools.
BENCH_TOOLS = ("npm", "npx", "node", "apt-get", "apt", "dpkg", "chromium", "ruff", "mypy")


def _trap(folder: Path) -> Path:
    folder.mkdir()
    for name in BENCH_TOOLS:
        tool = folder / name
        tool.write_text(f'#!/bin/sh\necho "TRAPPED: {name} $*" >&2\nexit 97\n')
        tool.chmod(0o755)
    return folder


def test_the_main_job_command_serves_on_stdio_without_the_test_bench(tmp_path: Path) -> None:
    config = store_config(tmp_path / "ralph.yaml", tmp_path / "store")
    env = environment(config)
    env["PATH"] = f"{_trap(tmp_path / 'trap')}{os.pathsep}{env['PATH']}"
    request = json.dumps(INITIALIZE) + "\n"
    done = subprocess.run(
        ["bash", str(REPO / ".ci" / "serve")],
        cwd=tmp_path,
        env=env,
        input=request,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "TRAPPED" not in done.stderr, done.stderr
    phases = [line for line in done.stderr.splitlines() if line.startswith("setup: ")]
    assert [line.split(" ... ")[0] for line in phases if " (" in line] == [
        "setup: venv",
        "setup: install",
        "setup: model",
    ], done.stderr
    # Set-up's lines are all on stderr: stdout is the protocol's, one answer.
    (answer,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "ralph-context"
    assert f"store {tmp_path / 'store'}" in done.stderr
