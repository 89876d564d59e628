"""The console's pages against a 10k-item store: server time per page (``Server-Timing``)
and what a client waits, through a real server process.

    ralph-context bench console --data ../shared/datasets/locomo/locomo_dev.json

Seeds a store as ``bench latency`` does (LoCoMo turns and vectors near theirs, 100 items an
iteration), records ``--iterations`` iteration results (one in five failed, its error
stored as an item), gives a few items feedback and runs one lifecycle pass (so some items
are aging, summarized and archived), then starts ``ralph-context serve --transport http``
on it and asks each page ``--requests`` times, one request at a time: searches with LoCoMo
questions, the items browser (first page, a deep page, filtered, the archive), item pages,
the iterations timeline and health. Target: every page ≤ 300 ms of server time.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx
import numpy as np

from benchmarks.latency.mcp_latency import start_http
from benchmarks.latency.run import load_corpus, load_store, percentile
from benchmarks.serving import owner_token_of
from benchmarks.settings import store_settings
from ralph_context import Engine, IterationResult
from ralph_context.config import Settings
from ralph_context.embeddings.local import load_embedder

__all__ = ["TARGET_MS", "markdown", "measure", "write_outputs"]

TARGET_MS = 300.0
# Ages that leave every state in a 100-iteration store: the oldest items archived, the next
# summarized, most aging, the newest active.
AGES = {
    "aging_after_iterations": 10,
    "summarize_after_iterations": 90,
    "archive_after_iterations": 97,
    "prune_after_iterations": 100_000,
    "auto_run": False,
}


async def seed(store: Path, data: Path, items: int, iterations: int) -> dict[str, Any]:
    """Fill ``store``; returns what the requests need (ids, questions, tags)."""
    corpus = load_corpus(data)
    embedder = load_embedder(Settings.load(None).embeddings)
    count = min(2760, len(corpus.turns), items)
    bases = np.asarray(embedder.embed(corpus.turns[:count], 32), dtype=np.float32)
    settings = store_settings(store, lifecycle=AGES, skillbook={"enabled": False})
    rng = np.random.default_rng(7)
    async with Engine(settings, model_loader=lambda _s: embedder) as engine:
        ids, _vectors = await load_store(engine, corpus, bases, items, rng)
        turns = corpus.turns
        for number in range(1, iterations + 1):
            failed = number % 5 == 0
            await engine.record_iteration(
                IterationResult(
                    iteration=number,
                    success=not failed,
                    summary=f"iteration {number}: {turns[number % len(turns)]}",
                    error=f"step {number} failed: {turns[(7 * number) % len(turns)]}"
                    if failed
                    else None,
                    duration_ms=int(rng.integers(2_000, 90_000)),
                    tokens_used=int(rng.integers(1_000, 40_000)),
                    cost=float(rng.uniform(0.001, 0.3)),
                )
            )
        for item_id in rng.choice(ids, size=20, replace=False).tolist():
            await engine.mark_useful(str(item_id), bool(rng.integers(0, 2)))
        report = await engine.run_lifecycle()
        await engine.maintain(reclaim=True)
        stats = await engine.stats()
    return {
        "ids": ids,
        "questions": corpus.questions,
        "items": stats.items,
        "archived": stats.archived,
        "by_state": stats.by_state,
        "lifecycle": {"summarized": len(report.summarized), "archived": len(report.archived)},
    }


def _pages(seeded: dict[str, Any], requests: int) -> dict[str, Callable[[int], str]]:
    """Each page by name: the n-th request's path."""
    pick = random.Random(11)
    ids: list[str] = seeded["ids"]
    questions: list[str] = seeded["questions"]

    def search(n: int) -> str:
        return "/console/search?" + urlencode({"q": questions[n % len(questions)]})

    def search_typed(n: int) -> str:
        query = {"q": questions[-1 - n % len(questions)], "type": ["error", "skill"]}
        return "/console/search?" + urlencode(query, doseq=True)

    return {
        "search": search,
        "search (types, max_items 25)": lambda n: search_typed(n) + "&max_items=25",
        "items: first page": lambda n: "/console/items",
        "items: page 50": lambda n: "/console/items?page=50",
        "items: type + tag": lambda n: f"/console/items?type=error&tag=session-{n % 30}",
        "items: one iteration": lambda n: f"/console/items?iteration={20 + n % 20}",
        "items: archived": lambda n: "/console/items?state=archived",
        "item": lambda n: f"/console/items/{pick.choice(ids)}",
        "iterations": lambda n: "/console/iterations",
        "iterations: page 2": lambda n: "/console/iterations?page=2",
        "health": lambda n: "/console/health",
    }


def _server_ms(answer: httpx.Response) -> float:
    timing = answer.headers.get("server-timing", "")
    return float(timing.split("dur=", 1)[1]) if "dur=" in timing else float("nan")


def ask(
    base: str, pages: dict[str, Callable[[int], str]], requests: int, token: str
) -> dict[str, Any]:
    """Every page ``requests`` times (after 3 untimed), one request at a time, as a script
    asks: with the store's owner token as a bearer token."""
    found: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=60, headers=headers) as http:
        for name, path in pages.items():
            for n in range(3):
                http.get(path(1000 + n)).raise_for_status()
            server, wall, sizes = [], [], []
            for n in range(requests):
                started = time.perf_counter()
                answer = http.get(path(n))
                wall.append((time.perf_counter() - started) * 1000)
                answer.raise_for_status()
                server.append(_server_ms(answer))
                sizes.append(len(answer.content))
            found[name] = {
                "requests": requests,
                "server_p50_ms": round(percentile(server, 50), 2),
                "server_p99_ms": round(percentile(server, 99), 2),
                "server_max_ms": round(max(server), 2),
                "wall_p50_ms": round(percentile(wall, 50), 2),
                "wall_p99_ms": round(percentile(wall, 99), 2),
                "kb": round(float(np.mean(sizes)) / 1024, 1),
            }
            print(
                f"{name:<30} server p50 {found[name]['server_p50_ms']:7.2f}  "
                f"p99 {found[name]['server_p99_ms']:7.2f}  max {found[name]['server_max_ms']:7.2f}"
                f"  wall p50 {found[name]['wall_p50_ms']:7.2f} ms",
                flush=True,
            )
    return found


def measure(
    data: Path, *, items: int = 10_000, iterations: int = 100, requests: int = 30
) -> dict[str, Any]:
    """Seed, serve, ask; the results (see the module's docstring)."""
    with tempfile.TemporaryDirectory(prefix="ralph-console-") as tmp:
        store = Path(tmp) / "store"
        started = time.monotonic()
        seeded = anyio.run(seed, store, data, items, iterations)
        seed_s = time.monotonic() - started
        print(
            f"seeded {seeded['items']:,} items (+{seeded['archived']:,} archived) in {seed_s:.0f} s"
        )
        config = Path(tmp) / "console.yaml"
        config.write_text(
            f"learning:\n  mcp_context:\n    storage:\n      path: {store}\n"
            "    lifecycle:\n      auto_run: false\n    skillbook:\n      enabled: false\n",
            encoding="utf-8",
        )
        server, url = start_http(config)
        try:
            load_before = os.getloadavg()
            base = url.removesuffix("/mcp")
            pages = ask(base, _pages(seeded, requests), requests, owner_token_of(config))
            load_after = os.getloadavg()
        finally:
            server.terminate()
            server.wait(timeout=60)
    worst = max(page["server_p99_ms"] for page in pages.values())
    return {
        "machine": {
            "cpus": os.cpu_count(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in load_after],
        },
        "store": {k: v for k, v in seeded.items() if k not in ("ids", "questions")},
        "iterations": iterations,
        "pages": pages,
        "target_server_ms": TARGET_MS,
        "worst_server_p99_ms": worst,
        "met": worst <= TARGET_MS,
    }


def markdown(results: dict[str, Any]) -> str:
    store = results["store"]
    lines = [
        f"Console pages against {store['items']:,} items (+{store['archived']:,} archived), "
        f"{results['iterations']} iterations; {next(iter(results['pages'].values()))['requests']} "
        f"requests a page, one at a time; load {results['machine']['load_before']} -> "
        f"{results['machine']['load_after']} on {results['machine']['cpus']} cores.",
        "",
        "| page | server p50 | server p99 | server max | client p50 | client p99 | KB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, page in results["pages"].items():
        lines.append(
            f"| {name} | {page['server_p50_ms']:.1f} | {page['server_p99_ms']:.1f} | "
            f"{page['server_max_ms']:.1f} | {page['wall_p50_ms']:.1f} | {page['wall_p99_ms']:.1f} "
            f"| {page['kb']} |"
        )
    verdict = "met" if results["met"] else "not met"
    lines += [
        "",
        f"Target: every page ≤ {results['target_server_ms']:.0f} ms of server time: {verdict} "
        f"(worst p99 {results['worst_server_p99_ms']:.1f} ms).",
    ]
    return "\n".join(lines) + "\n"


def write_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(results), encoding="utf-8")
    return paths
