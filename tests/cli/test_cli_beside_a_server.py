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
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from ralph_context.models import ContextItem, ContextType
from ralph_context.transfer.export_import import FORMAT
from tests.server_process import (
    CLI,
    environment,
    owner_client,
    run_cli,
    start_http_server,
    store_config,
)

# Runs the CLI, then prints the heavy modules it imported on stderr's last line.
_PROBE = (
    "import json, os, runpy, sys\n"
    "HEAVY = os.environ.pop('PROBE_HEAVY')\n"
    "sys.argv = ['ralph-context', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('ralph_context', run_name='__main__')\n"
    "finally:\n"
    "    heavy = sorted(m for m in sys.modules if m.split('.')[0] in json.loads(HEAVY))\n"
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


# What a command answered by the server never imports: no store, no model, no event loop.
_HEAVY = ("lancedb", "onnxruntime", "fastembed", "pyarrow", "anyio", "structlog")


def _cli(
    config: Path, *arguments: str, modules: Iterable[str] = _HEAVY
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``ralph-context ARGUMENTS`` run to its end, and which of ``modules`` it imported."""
    done = subprocess.run(
        [CLI[0], "-c", _PROBE, *arguments],
        env={**environment(config), "PROBE_HEAVY": json.dumps(sorted(modules))},
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


def _export_file(path: Path, *contents: str) -> Path:
    """An export of items ``contents`` (skills, no vectors: the server embeds them)."""
    header = {"format": FORMAT, "model_id": "another model", "dimension": 3}
    lines = [json.dumps(header)]
    for text in contents:
        item = ContextItem(content=text, content_type=ContextType.SKILL, source="a backup")
        lines.append(json.dumps({"kind": "item", "item": item.model_dump(mode="json")}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _found(config: Path, cwd: Path, query: str) -> dict[str, dict[str, Any]]:
    done = run_cli(config, "search", query, "--json", "--min-score", "0", cwd=cwd)
    assert done.returncode == 0, done.stderr
    return {hit["item"]["id"]: hit["item"] for hit in json.loads(done.stdout)["items"]}


def store_forget_import(config: Path, cwd: Path) -> None:
    """``store``, ``forget`` and ``import`` beside a server that holds the store: each exits
    0 as it does without one, and the next search sees what it did."""
    note = "The grpc client retries a deadline once, then gives up"
    stored = run_cli(config, "store", note, "--type", "skill", "--tag", "grpc", "--json", cwd=cwd)
    assert stored.returncode == 0, stored.stderr
    answer = json.loads(stored.stdout)
    assert answer["tier"] == "semantic"
    found = _found(config, cwd, "grpc deadline retries")
    assert found[answer["id"]]["content"] == note
    assert found[answer["id"]]["metadata"]["recorded_by"] == "cli"  # the CLI's, via the server

    forgot = run_cli(config, "forget", "--id", answer["id"], cwd=cwd)
    assert forgot.returncode == 0, forgot.stderr
    said = forgot.stdout.splitlines()
    assert said[:2] == ["forgot 1 item(s)", f"  {answer['id']}"]
    # The server purged its files of the forgotten row, and says so as the CLI alone does.
    assert [line.split(" (")[0] for line in said[2:]] == [
        "purged the store's files of deleted rows"
    ]
    assert answer["id"] not in _found(config, cwd, "grpc deadline retries")

    backup = _export_file(cwd / "backup.jsonl", "Release notes go in CHANGELOG.md, newest first")
    imported = run_cli(config, "import", str(backup), cwd=cwd)
    assert imported.returncode == 0, imported.stderr
    assert imported.stderr.splitlines()[-1] == (
        "imported 1 items, 0 archived, 0 iterations (0 already there, 1 embedded again)"
    )
    again = run_cli(config, "import", str(backup), cwd=cwd)
    assert "imported 0 items" in again.stderr and "(1 already there" in again.stderr
    found = _found(config, cwd, "where do release notes go")
    assert "Release notes go in CHANGELOG.md, newest first" in {
        item["content"] for item in found.values()
    }
    # Forget is final through the server too: the backup does not bring the item back
    # unless the import says --include-forgotten.
    kept = next(i for i, item in found.items() if item["content"].startswith("Release notes"))
    assert run_cli(config, "forget", "--id", kept, cwd=cwd).returncode == 0
    skipped = run_cli(config, "import", str(backup), cwd=cwd)
    assert "imported 0 items" in skipped.stderr and "1 skipped: forgotten" in skipped.stderr
    assert kept not in _found(config, cwd, "where do release notes go")
    back = run_cli(config, "import", str(backup), "--include-forgotten", cwd=cwd)
    assert "imported 1 items" in back.stderr and "1 brought back" in back.stderr
    assert kept in _found(config, cwd, "where do release notes go")
    broken = cwd / "broken.jsonl"
    broken.write_text(backup.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    refused = run_cli(config, "import", str(broken), cwd=cwd)
    assert refused.returncode == 2, refused.stderr
    assert "line 3: not JSON" in refused.stderr  # the file's line, though sent in chunks


def test_store_forget_and_import_go_through_a_running_http_server(
    server: tuple[Path, str],
) -> None:
    config, _url = server
    store_forget_import(config, config.parent)


def test_without_a_server_stats_health_export_and_forget_load_no_model(tmp_path: Path) -> None:
    config = store_config(tmp_path / "ralph.yaml", tmp_path / "store")
    stored = run_cli(config, "store", "Run the migrations before the tests", "--json")
    assert stored.returncode == 0, stored.stderr
    item_id = json.loads(stored.stdout)["id"]
    model = {"onnxruntime", "fastembed", "tokenizers"}
    for arguments in (
        ("stats", "--json"),
        ("health", "--json"),
        ("export", str(tmp_path / "backup.jsonl")),
        ("forget", "--id", item_id),
    ):
        done, heavy = _cli(config, *arguments, modules=model)
        assert done.returncode == 0, (arguments, done.stderr)
        assert heavy == [], arguments  # the store opened, the model not loaded
    stats, _ = _cli(config, "stats", "--json", modules=model)
    assert json.loads(stats.stdout)["items"] == 0  # the forget took effect
