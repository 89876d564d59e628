"""The CLI beside the agents' shared server (the one ``serve --shared``, the MCP entry
``init --agent`` registers, starts and the hooks use for up to 30 idle minutes): ``store``,
``forget`` and ``import`` go through it, and the next search sees what they did. Before,
each exited 1 with "open for writing by process ..." for as long as it ran."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ralph_context.server.agents.project import read_server
from tests.agents.conftest import agent_env, wait_for_note
from tests.cli.test_cli_beside_a_server import store_forget_import
from tests.server_process import store_config


def test_store_forget_and_import_go_through_the_agents_shared_server(project: Path) -> None:
    config = store_config(project / "ralph.yaml", project / ".agent" / "context")
    bridge = subprocess.Popen(
        [sys.executable, "-m", "ralph_context", "serve", "--shared"],
        cwd=project,
        env=agent_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_note(project, timeout=300)
        note = read_server(project)
        assert note is not None
        store_forget_import(config, project)
        assert read_server(project) is not None  # the same server held the store throughout
    finally:
        # Ended, not closed: a bridge whose client never spoke does not exit at stdin's end
        # (on main too; the project fixture stops the shared server).
        bridge.terminate()
        bridge.wait(timeout=60)
        assert bridge.stdin is not None
        bridge.stdin.close()
