"""LoCoMo over MCP: the tiny conversation stored and asked through the real server process
(stdio), checked for the shape of what it reports, not for its figures."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from benchmarks.retrieval.over_mcp import KS, MODE, MODE_NO_THREADS, evaluate_over_mcp, main

TINY = Path(__file__).with_name("tiny_locomo.json")


@pytest.fixture
def anyio_backend() -> str:
    """Server subprocesses cost seconds each: one backend."""
    return "asyncio"


async def test_threaded_run_reports_recall_at_every_k_latency_and_ingest(tmp_path: Path) -> None:
    with anyio.fail_after(300):
        results = await evaluate_over_mcp(
            TINY, conversations=None, questions=None, workdir=tmp_path
        )
    assert set(results["modes"]) == {MODE}
    row = results["modes"][MODE]
    assert list(row["recall"]) == [str(k) for k in KS]
    for cell in row["recall"].values():
        assert 0.0 <= cell["overall"] <= 1.0
        assert set(cell) <= {"overall", "1", "2", "3", "4", "5"}
    assert 0 < row["latency_ms"]["p50"] <= row["latency_ms"]["p99"]
    assert (results["threads"], results["questions"], results["conversations"]) == (
        True,
        5,
        ["tiny-1"],
    )
    assert results["ingest"]["items"] == 8 and results["ingest"]["seconds"] > 0
    assert [p async for p in anyio.Path(tmp_path).iterdir()] == []  # the stores are gone
    json.dumps(results)


def test_the_command_without_threads_prints_recall_and_writes_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.json"
    main(["--data", str(TINY), "--questions", "2", "--no-threads", "--out", str(out)])
    printed = capsys.readouterr().out
    for k in KS:
        assert f"recall@{k}: " in printed
    assert printed.startswith(f"{MODE_NO_THREADS}: ")
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["threads"] is False and results["questions"] == 2
    assert set(results["modes"]) == {MODE_NO_THREADS}
