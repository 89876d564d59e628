"""What ``bench latency`` reports as its summary, and the issues' targets for each key."""

from __future__ import annotations

from typing import Any

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
    by_size = {run["items"]: run for run in runs}
    at = by_size.get(100_000)
    million = by_size.get(1_000_000)

    def p(run: dict[str, Any] | None, face: str, q: str) -> float | None:
        return None if run is None else float(run[face][f"{q}_ms"])

    return {
        "floor_p50_100k": None if at is None else at["floor"]["sum"]["p50_ms"],
        "engine_p50_100k": p(at, "engine", "p50"),
        "engine_p99_100k": p(at, "engine", "p99"),
        "stdio_p99_100k": p(at, "stdio", "p99"),
        "http_p99_100k": p(at, "http", "p99"),
        "http8_p99_100k": p(at, "http8", "p99"),
        "hook_p99_100k": None if at is None else at["hook_loop"]["retrieval"]["p99_ms"],
        "agent_hook_p95_100k": None if at is None else at["agent_hook"]["prompt"]["p95_ms"],
        "agent_hook_fail_open_max": None
        if at is None
        else max(
            at["agent_hook"]["server_down"]["max_ms"], at["agent_hook"]["server_hung"]["max_ms"]
        ),
        "engine_p99_1m": p(million, "engine", "p99"),
        # A result stored in the loop (Ralph awaits it): issue 40's targets.
        "loop_store_p99_100k": None if at is None else at["hook_loop"]["store"]["p99_ms"],
        "loop_store_p99_1m": None if million is None else million["hook_loop"]["store"]["p99_ms"],
        "store_mb_100k": None if at is None else at["store_mb"],
        "server_rss_mb_100k": None if at is None else at.get("server_rss_mb"),
        "server_rss_mb_1m": None if million is None else million.get("server_rss_mb"),
        "cpu_ms_per_search_100k": None if at is None else at["engine"].get("cpu_ms"),
        "rss_mb_100k": None if at is None else at["rss_mb"],
    }
