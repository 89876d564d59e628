"""What ``bench latency`` reports as its summary, and the issues' targets for each key."""

from __future__ import annotations

from typing import Any

from benchmarks.latency.phases import value

__all__ = ["TARGETS", "summary"]

# The targets (ms unless named).
TARGETS: dict[str, float | str] = {
    "engine_p50_100k": "<= 1.5 x floor",
    "hook_p99_100k": 50,
    "agent_hook_p95_100k": 250,
    "agent_hook_fail_open_max": 1000,
    "engine_p99_100k": 25,
    "stdio_p99_100k": 40,
    "http_p99_100k": 50,
    "http8_p99_100k": 150,
    "engine_p99_1m": 60,
    "loop_store_p99_100k": 100,
    "loop_store_p99_1m": 250,
    "store_mb_100k": 400,
    # Issue 41: the HTTP server's own RSS after its phases, and CPU per Engine.search.
    "server_rss_mb_100k": 700,
    "server_rss_mb_1m": 2000,
    "cpu_ms_per_search_100k": 12,
}


def summary(runs: list[dict[str, Any]]) -> dict[str, float | None]:
    """The issue's keys from the runs at 100k and 1M items; None where a size was not run
    or the phase that measures a key failed (``phases.Phases``)."""
    by_size = {run["items"]: run for run in runs}
    at = by_size.get(100_000)
    million = by_size.get(1_000_000)
    fail_open = [value(at, "agent_hook", way, "max_ms") for way in ("server_down", "server_hung")]
    return {
        "floor_p50_100k": value(at, "floor", "sum", "p50_ms"),
        "engine_p50_100k": value(at, "engine", "p50_ms"),
        "engine_p99_100k": value(at, "engine", "p99_ms"),
        "stdio_p99_100k": value(at, "stdio", "p99_ms"),
        "http_p99_100k": value(at, "http", "p99_ms"),
        "http8_p99_100k": value(at, "http8", "p99_ms"),
        "hook_p99_100k": value(at, "hook_loop", "retrieval", "p99_ms"),
        "agent_hook_p95_100k": value(at, "agent_hook", "prompt", "p95_ms"),
        "agent_hook_fail_open_max": None if None in fail_open else max(fail_open),
        "engine_p99_1m": value(million, "engine", "p99_ms"),
        # A result stored in the loop (Ralph awaits it): issue 40's targets.
        "loop_store_p99_100k": value(at, "hook_loop", "store", "p99_ms"),
        "loop_store_p99_1m": value(million, "hook_loop", "store", "p99_ms"),
        "store_mb_100k": value(at, "store_mb"),
        "server_rss_mb_100k": value(at, "server_rss_mb"),
        "server_rss_mb_1m": value(million, "server_rss_mb"),
        "cpu_ms_per_search_100k": value(at, "engine", "cpu_ms"),
        "rss_mb_100k": value(at, "rss_mb"),
    }
