"""The CLI beside a running server: ``stats``, ``health`` and ``search`` ask the server that
holds the store (its MCP tools) instead of opening the store and loading the model.

One server process for the module (its start is most of the time); each command is a real
``ralph-context`` process. That the command did not open the store shows in its answer: the
server's own figures (``store`` named as the server names it to a remote client) while that
server holds the store's writer lock; that it loaded neither LanceDB nor the model, nor
anyio and structlog (no event loop, nothing logged), in the modules it imported (the test
runs the CLI in a Python that lists them after it, ``_cli``).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.server_process import CLI, environment, owner_client, start_http_server, store_config

# Runs the CLI, then prints the heavy modules it imported on stderr's last line.
_PROBE = (
    "import json, runpy, sys\n"
    "sys.argv = ['ralph-context', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('ralph_context', run_name='__main__')\n"
    "finally:\n"
    "    heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
    "('lancedb', 'onnxruntime', 'fastembed', 'pyarrow', 'anyio', 'structlog'))\n"
    "    sys.stderr.write('\\nMODULES ' + json.dumps(heavy) + '\\n')\n"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    folder = tmp_path_factory.mktemp("beside")
    config = store_config(folder / "ralph.yaml", folder / "store")
    process, url = start_http_server(config)
    try:
        yield config, url
    finally:
        process.stop(kill=True)


def _cli(config: Path, *arguments: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``ralph-context ARGUMENTS`` run to its end, and the heavy modules it imported."""
    done = subprocess.run(
        [CLI[0], "-c", _PROBE, *arguments],
        env=environment(config),
        cwd=config.parent,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    last = done.stderr.rstrip().rsplit("\n", 1)[-1]
    assert last.startswith("MODULES "), done.stderr
    return done, json.loads(last.removeprefix("MODULES "))


def _tool(config: Path, url: str, name: str, arguments: Mapping[str, object]) -> dict[str, Any]:
    async def call() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with owner_client(url, config) as client:
                answer = await client.call_tool(name, dict(arguments))
        assert answer.structured_content is not None, answer
        return dict(answer.structured_content)

    return anyio.run(call)


def test_stats_answers_with_the_servers_figures_without_opening_the_store(
    server: tuple[Path, str],
) -> None:
    config, url = server
    fact = {"content": "Run migrations first", "context_type": "skill"}
    stored = _tool(config, url, "store_context", fact)
    started = time.perf_counter()
    done, heavy = _cli(config, "stats", "--json")
    took = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    # The server's answer, to the letter: the store is not readable here without its lock
    # holder's say (the server holds the writer lock all along).
    assert stats == _tool(config, url, "get_context_stats", {})
    assert stats["items"] >= 1 and stats["by_type"].get("skill", 0) >= 1
    assert heavy == [], heavy  # no LanceDB, no onnxruntime: nothing opened, nothing loaded
    print(f"\nstats beside a server: {took:.2f} s wall (the item stored: {stored['id']})")


def test_health_reports_the_servers_actors_and_keeps_its_exit_code(
    server: tuple[Path, str],
) -> None:
    config, _ = server
    done, heavy = _cli(config, "health", "--json")
    assert done.returncode == 0, done.stderr
    health = json.loads(done.stdout)
    assert (health["status"], health["tier"]) == ("healthy", "semantic")
    assert health["store"] == "local store, namespace default"  # as the server names it
    assert heavy == []
    table, _ = _cli(config, "health")
    assert "not_configured" in table.stdout
    # "inference not_configured" is a state, not an error: the last-error column is empty.
    inference = next(line for line in table.stdout.splitlines() if "inference" in line)
    assert inference.count("not_configured") == 1, inference


def test_search_is_answered_by_the_server_in_the_mcp_shape(server: tuple[Path, str]) -> None:
    config, url = server
    _tool(
        config,
        url,
        "store_context",
        {"content": "The CSV export writes a UTF-8 byte order mark", "context_type": "output"},
    )
    done, heavy = _cli(config, "search", "CSV export encoding", "--json", "--min-score", "0")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert heavy == []
    contents = [hit["item"]["content"] for hit in answer["items"]]
    assert "The CSV export writes a UTF-8 byte order mark" in contents
    assert answer["stats"]["tier"] == "semantic"
    refused, _ = _cli(config, "search", "x", "--where", "a == 1", "--limit", "3", "--type", "task")
    assert refused.returncode == 0, refused.stderr  # conditions travel as the tool takes them
