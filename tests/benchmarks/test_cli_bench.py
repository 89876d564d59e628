"""``ralph-context bench`` as a user runs it: a real process writing real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import cli

HERE = Path(__file__).parent


@pytest.mark.model
def test_bench_retrieval_writes_its_files(tmp_path: Path) -> None:
    done = cli(
        "bench",
        "retrieval",
        "--data",
        str(HERE / "tiny_locomo.json"),
        "--scenarios",
        "2",
        "--paraphrases",
        "1",
        "--over-mcp",
        "--out",
        str(tmp_path),
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "recall.png",
        "results.json",
        "results.md",
    ]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["questions"] == 5
    assert results["scenarios"]["queries"] == 10  # 2 per kind
    # What a client gets heads the table; the same through a server over MCP closes it.
    assert list(results["modes"]) == [
        "default",
        "vector",
        "text",
        "hybrid",
        "served",
        "default_mcp",
    ]
    assert (results["paraphrases"]["answerable"], results["paraphrases"]["absent"]) == (6, 6)
    assert "| DRAGON (paper, 10 conv.) |" in done.stderr
    assert "Loop scenarios, 10 queries" in done.stderr
    assert "Paraphrase set: 6 answerable and 6 absent" in done.stderr


@pytest.mark.model
def test_bench_ab_runs_a_suite_and_writes_its_files(tmp_path: Path) -> None:
    suite = str(HERE / "ab_suite.yaml")
    done = cli("bench", "ab", "--suite", suite, "--runs-per-task", "1", "--out", str(tmp_path))
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["kinds"]) == {"bug_fix", "simple_file_creation"}
    assert results["runs_per_task"] == 1
    assert (tmp_path / "iterations.png").is_file() and (tmp_path / "latency.png").is_file()
    assert "| bug_fix | medium |" in done.stderr


@pytest.mark.model
def test_bench_latency_measures_every_face_and_writes_its_files(tmp_path: Path) -> None:
    done = cli(
        "bench",
        "latency",
        "--data",
        str(HERE / "tiny_locomo.json"),
        "--items",
        "1000",
        "--queries",
        "10",
        "--iterations",
        "10",
        "--agent-ms",
        "20",
        "--out",
        str(tmp_path),
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "latency.png",
        "results.json",
        "results.md",
    ]
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["summary"]) == {
        "floor_p50_100k",
        "engine_p50_100k",
        "engine_p99_100k",
        "stdio_p99_100k",
        "http_p99_100k",
        "http8_p99_100k",
        "hook_p99_100k",
        "agent_hook_p95_100k",
        "agent_hook_fail_open_max",
        "engine_p99_1m",
        "loop_store_p99_100k",
        "loop_store_p99_1m",
        "store_mb_100k",
        "rss_mb_100k",
        "server_rss_mb_100k",
        "server_rss_mb_1m",
        "cpu_ms_per_search_100k",
    }
    assert all(value is None for value in results["summary"].values())  # no 100k store here
    (run,) = results["runs"]
    assert run["items"] == 1000 and run["store_mb"] > 0
    for face in ("engine", "stdio", "http", "http8", "hook"):
        assert run[face]["n"] >= 5 and 0 < run[face]["p50_ms"] <= run[face]["p99_ms"], face
    assert run["hook_loop"]["retrieval"]["n"] == 10 and run["hook_loop"]["store"]["n"] == 10
    # CPU per search: the model's and LanceDB's threads count too, so more than nothing.
    assert run["engine"]["cpu_ms"] > 0 and run["server_rss_mb"] > 100  # the model alone
    # Claude Code's hook, a process per call: answered with context from the server; the
    # fail-open paths end at the hook's own deadline.
    hooks = run["agent_hook"]
    assert hooks["prompt"]["n"] >= 5 and hooks["prompt_answered_with_context"] >= 1
    assert hooks["server_hung"]["p50_ms"] >= 800 and hooks["server_down"]["p50_ms"] > 0
    for way in ("own_engine", "via_server"):  # Ralph v2's hook, a process per call
        assert run["hook_v2"][way]["n"] == 2 and run["hook_v2"][way]["p50_ms"] > 0, way
    assert results["ingest"]["mcp_batch_items_per_s"] > 0
    assert len(results["ingest"]["raw_rounds"]) == len(results["ingest"]["batch_rounds"]) == 3
    assert "| 1,000 |" in done.stderr


def test_bench_errors_are_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((HERE / "ab_suite.yaml").read_text().replace("kind: bug_fix", "kind: docs"))
    done = cli("bench", "ab", "--suite", str(bad), check=False)
    assert done.returncode == 2
    assert "tasks[0] (admin-api).kind: Input should be" in done.stderr
    missing = cli("bench", "retrieval", "--data", str(tmp_path / "none.json"), check=False)
    assert missing.returncode == 2 and "no such file (pass --data" in missing.stderr
    unnamed = cli("bench", "retrieval", check=False)
    assert unnamed.returncode == 2
    assert "needs --data" in unnamed.stderr and "snap-research/LoCoMo" in unnamed.stderr
    unnamed = cli("bench", "latency", check=False)
    assert unnamed.returncode == 2 and "bench latency needs --data" in unnamed.stderr
    sizes = cli("bench", "latency", "--data", "x.json", "--items", "10k", check=False)
    assert sizes.returncode == 2 and "--items must be comma-separated integers" in sizes.stderr
    openai = cli("bench", "ab", "--agent", "openai", check=False)
    assert openai.returncode == 2 and "needs --base-url and --model" in openai.stderr
    store = cli("bench", "replicas", "--data", "x.json", "--store", "ftp://b/x", check=False)
    assert (
        store.returncode == 2
        and "--store: 'ftp://b/x' is not an object-storage URI" in store.stderr
    )


@pytest.mark.model
def test_bench_console_times_every_page_and_writes_its_files(tmp_path: Path) -> None:
    done = cli(
        "bench",
        "console",
        "--data",
        str(HERE / "tiny_locomo.json"),
        "--items",
        "1000",
        "--iterations",
        "10",
        "--requests",
        "5",
        "--out",
        str(tmp_path),
    )
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["store"]["items"] + results["store"]["archived"] == 1000 + 2  # 2 errors
    pages = results["pages"]
    assert {"search", "items: archived", "item", "iterations", "health"} <= set(pages)
    for page in pages.values():
        assert page["requests"] == 5
        assert 0 < page["server_p50_ms"] <= page["wall_p50_ms"]
    assert results["met"] == (results["worst_server_p99_ms"] <= 300)
    assert "| health |" in done.stderr and (tmp_path / "results.md").is_file()


@pytest.mark.model
def test_bench_replicas_shares_a_store_on_a_local_s3_endpoint(tmp_path: Path) -> None:
    done = cli(
        "bench",
        "replicas",
        "--data",
        str(HERE / "tiny_locomo.json"),
        "--items",
        "1000",
        "--queries",
        "8",
        "--writes",
        "2",
        "--visibility",
        "2",
        "--out",
        str(tmp_path),
    )
    results = json.loads((tmp_path / "results.json").read_text())
    search = results["search"]
    assert search["items"] == 1000 and search["files"] > 0
    for key in ("local_first", "local_again", "object_first", "object_again"):
        # Every question of the tiny file (5, under --queries), in each pass.
        assert search[key]["n"] == 5 and 0 < search[key]["p50_ms"] <= search[key]["p99_ms"]
    assert [w["replicas"] for w in results["writes"]] == [1, 2, 4]
    for run in results["writes"]:
        # Two clients a replica, each 3 warm-up writes and the 2 timed ones.
        assert run["acknowledged"] == run["writes"] == run["found"] == 10 * run["replicas"]
        assert run["timed"] == run["write_ms"]["n"] == 4 * run["replicas"]
        assert (run["lost"], run["duplicated"], run["errors"]) == (0, 0, 0)
        # Counted in moto's request log: at least its key's claim and, shared with the
        # write it was grouped with at most, the item's data and the table's manifest.
        assert run["requests_per_write"] >= 2
        assert 0 < run["item_commits_per_write"] <= run["commits_per_write"]
        assert run["refused_commits_per_write"] >= 0
        assert run["endpoint_cpu_ms_per_write"] > 0 and run["endpoint_busy_cores"] > 0
    served = results["endpoint_requests_per_s"]
    assert set(served) == {"1", "8"} and min(served.values()) > 0
    assert results["visibility"]["n"] == 2 and results["visibility"]["p50_ms"] > 0
    assert set(results["summary"]) == set(results["goals"])
    assert results["summary"]["lost"] == results["summary"]["duplicated"] == 0
    assert "| object storage, again (warm) |" in done.stderr
