"""`bench latency` keeps what it measured when one phase fails, and names the phase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks.latency import suite
from benchmarks.latency.phases import Phases
from benchmarks.latency.report import markdown, write_outputs
from benchmarks.latency.targets import summary

HERE = Path(__file__).parent


@pytest.mark.model
def test_a_failing_phase_is_named_and_every_other_figure_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_: Any, **__: Any) -> dict[str, Any]:
        # What stop 66's mpnet run met: a hook refusing the store's model.
        raise RuntimeError("the store was built with another model")

    monkeypatch.setattr(suite, "agent_hooks", refused)
    ticks: list[int] = []

    def progress(total: int) -> Any:
        return lambda: ticks.append(total)

    results = anyio.run(
        lambda: suite.measure(
            HERE / "tiny_locomo.json",
            sizes=[1000],
            queries=10,
            hook_iterations=5,
            agent_ms=0,
            ingest_texts=16,
            progress=progress,
        )
    )
    assert results["failed"] == {
        "1000 items: http and agent hook": "RuntimeError: the store was built with another model"
    }
    (run,) = results["runs"]
    assert "agent_hook" not in run
    # The phases before and after it were measured, and the failing phase kept what it had.
    for face in ("engine", "stdio", "http", "http8", "hook"):
        assert run[face]["n"] >= 5, face
    assert run["hook_loop"]["store"]["n"] == 5 and run["hook_v2"]["own_engine"]["n"] == 2
    assert results["ingest"]["texts"] > 0  # (the tiny corpus has fewer than 16 turns)
    assert len(ticks) == 1 + 7  # every phase ticked, the failed one too
    paths = write_outputs(results, tmp_path)
    assert [p.name for p in paths] == ["results.json", "results.md", "latency.png"]
    table = (tmp_path / "results.md").read_text()
    assert "**Failed**, 1000 items: http and agent hook: RuntimeError" in table
    assert "| 1,000 |" in table


def test_the_summary_says_none_for_what_a_failed_phase_would_have_measured() -> None:
    face = {"p50_ms": 10.0, "p95_ms": 12.0, "p99_ms": 14.0, "n": 10}
    run: dict[str, Any] = {
        "items": 100_000,
        "store_mb": 200.0,
        "engine": {**face, "cpu_ms": 9.0},
        "rss_mb": 300.0,
        "failed": {"http and agent hook": "RuntimeError: refused"},
    }
    got = summary([run])
    assert got["engine_p99_100k"] == 14.0 and got["cpu_ms_per_search_100k"] == 9.0
    assert got["agent_hook_p95_100k"] is None and got["agent_hook_fail_open_max"] is None
    assert got["http_p99_100k"] is None and got["floor_p50_100k"] is None
    table = markdown({"runs": [run], "ingest": {}, "summary": got, "failed": {"x": "y"}})
    assert "| 100,000 | — | 10.0 / 14.0 | — |" in table and "**Failed**, x: y" in table


def test_a_phase_that_raises_is_recorded_and_the_next_one_runs() -> None:
    run: dict[str, Any] = {"items": 5}
    ticks: list[None] = []
    phase = Phases(run, lambda: ticks.append(None))

    async def broken() -> None:
        raise ValueError("no server")

    async def fine() -> None:
        run["ok"] = True

    async def both() -> tuple[bool, bool]:
        return await phase("first", broken), await phase("second", fine, tick=False)

    assert anyio.run(both) == (False, True)
    assert run == {"items": 5, "failed": {"first": "ValueError: no server"}, "ok": True}
    assert len(ticks) == 1
