"""The CLI as a user runs it: a real process, a real store, JSON on stdout, logs on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "ralph.yaml"
    path.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n", encoding="utf-8"
    )
    return path


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "ralph_context", *args],
        capture_output=True,
        text=True,
        # A hang guard, not a timing: the bench commands' end-to-end runs took 119-163 s on
        # a machine loaded by other work (bench retrieval over MCP the longest).
        timeout=420,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}\nstdout:{done.stdout}\nstderr:{done.stderr}")
    return done


def search_json(config: Path, query: str, *options: str) -> dict[str, Any]:
    """``search --json`` with every score kept (``--min-score 0``)."""
    done = cli("search", query, *options, "--min-score", "0", "--config", str(config), "--json")
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_store_then_search_json_has_the_documented_shape(config: Path) -> None:
    stored = json.loads(
        cli(
            "store",
            "ModuleNotFoundError: requests; added it to requirements.txt",
            "--type",
            "error",
            "--tag",
            "deps",
            "--tag",
            "x' OR 1=1 --",
            "--config",
            str(config),
            "--json",
        ).stdout
    )
    cli("store", "Lunch menu: soup and bread", "--type", "output", "--config", str(config))
    found = json.loads(
        cli(
            "search", "missing module requests", "--limit", "5", "--config", str(config), "--json"
        ).stdout
    )
    # get_relevant_context's shape: each hit is {item, score, breakdown, tokens}.
    assert found["stats"]["tier"] == "semantic"
    assert [hit["item"]["id"] for hit in found["items"]] == [stored["id"]]
    first = found["items"][0]
    assert {"item", "score", "breakdown", "tokens"} == set(first)
    assert {"id", "content", "content_type", "state", "tags"} <= set(first["item"])
    assert first["item"]["content_type"] == "error"
    assert first["item"]["state"] == "active"
    assert first["item"]["tags"] == ["deps", "x' OR 1=1 --"]
    assert 0.3 <= first["score"] <= 1.0
    assert {"search_time_ms", "query_embedding_time_ms", "total_candidates"} <= set(found["stats"])
    filtered = search_json(config, "the requests module is missing", "--type", "error")
    assert {hit["item"]["content_type"] for hit in filtered["items"]} == {"error"}
    cli(
        "store",
        "requests is pinned to 2.31 for the proxy bug",
        "--metadata",
        '{"pinned": true, "version": "2.31"}',
        "--config",
        str(config),
    )
    pinned = search_json(
        config, "requests module", "--where", "pinned == true", "-w", 'version >= "2.30"'
    )
    assert [hit["item"]["metadata"] for hit in pinned["items"]] == [
        {"pinned": True, "version": "2.31", "recorded_by": "cli"}
    ]


def test_stats_and_health_report_the_store_and_tier(config: Path) -> None:
    cli(
        "store", "Remember: run migrations before tests", "--type", "skill", "--config", str(config)
    )
    stats = json.loads(cli("stats", "--config", str(config), "--json").stdout)
    health = json.loads(cli("health", "--config", str(config), "--json").stdout)
    assert stats["items"] == 1
    assert stats["by_type"] == {"skill": 1}
    assert stats["dimension"] == 384
    assert (health["status"], health["tier"]) == ("healthy", "semantic")
    assert health["actors"]["embedding"]["state"] == "running"
    assert health["actors"]["inference"]["state"] == "not_configured"  # off by choice
    assert health["store"] == str(config.parent / "store")
    # The table names what each number counts: no record yet, the item's iteration 1.
    table = cli("stats", "--config", str(config)).stdout
    assert "iteration records" in table and "latest iteration (items or records)" in table
    # On a pipe, not a terminal: the summary line alone, no spinner frame.
    exported = cli("export", str(config.parent / "backup.jsonl"), "--config", str(config))
    assert exported.stderr.splitlines() == [
        "exported 1 items, 0 archived, 0 iterations (0 already there, 0 embedded again)"
    ]


def test_bad_input_exits_2_with_a_message_and_stores_nothing(config: Path) -> None:
    done = cli("store", "   ", "--config", str(config), check=False)
    assert done.returncode == 2
    assert "empty or only whitespace" in done.stderr
    unknown = cli("store", "ok", "--type", "memo", "--config", str(config), check=False)
    assert unknown.returncode == 2
    assert "'memo' is not one of 'task', 'iteration', 'skill', 'file', 'output'" in " ".join(
        unknown.stderr.replace("│", " ").split()
    )
    where = cli("search", "x", "--where", "priority", "--config", str(config), check=False)
    assert where.returncode == 2
    assert "--where 'priority' is not KEY OP VALUE" in where.stderr
    stats = json.loads(cli("stats", "--config", str(config), "--json").stdout)
    assert stats["items"] == 0


def test_health_exits_1_and_reports_text_tier_without_a_model(config: Path, tmp_path: Path) -> None:
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        f"    embeddings:\n      model_path: {tmp_path / 'no-model'}\n",
        encoding="utf-8",
    )
    done = cli("health", "--config", str(config), "--json", check=False)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert (report["status"], report["tier"]) == ("degraded", "text")
    assert report["actors"]["embedding"]["state"] == "down"  # configured, and failing
    assert report["actors"]["inference"]["state"] == "not_configured"  # never set up
    assert "ralph-context model install" in report["actors"]["embedding"]["last_error"]


def test_changing_models_asks_for_reindex_and_reindex_fixes_it(config: Path) -> None:
    item = json.loads(
        cli("store", "flaky test in the payments module", "--config", str(config), "--json").stdout
    )
    record = config.parent / "store" / "store.json"
    data = json.loads(record.read_text())
    data["model_id"] = "some-older-model"
    record.write_text(json.dumps(data))
    refused = cli("search", "payments test", "--config", str(config), check=False)
    assert refused.returncode == 1
    assert "ralph-context reindex" in refused.stderr
    assert "some-older-model" in refused.stderr
    cli("reindex", "--config", str(config))
    found = json.loads(cli("search", "payments test", "--config", str(config), "--json").stdout)
    assert [hit["item"]["id"] for hit in found["items"]] == [item["id"]]
    assert found["stats"]["tier"] == "semantic"


def test_model_install_names_the_installable_models_when_asked_for_another(
    tmp_path: Path,
) -> None:
    target = str(tmp_path / "m")
    done = cli("model", "install", "--model", "all-mpnet", "--dir", target, check=False)
    assert done.returncode == 1
    assert "'all-mpnet' is not an installable model" in done.stderr
    assert "all-MiniLM-L6-v2, all-mpnet-base-v2" in done.stderr
    assert not (tmp_path / "m").exists()


def test_demo_stores_reopens_and_searches() -> None:
    done = cli("demo")
    assert "session 2: reopened the store, tier semantic" in done.stdout
    assert "ModuleNotFoundError" in done.stdout
    assert "403" in done.stdout
    assert "Before writing a file" in done.stdout


def test_an_error_message_is_printed_as_written_not_read_as_markup() -> None:
    # Advice such as `pip install 'ralph-context[model]'` and users' values hold brackets,
    # which rich would otherwise take for styles and drop.
    done = cli("serve", "--namespace", "[bold]web", check=False)
    assert done.returncode == 2
    assert "--namespace '[bold]web'" in done.stderr
