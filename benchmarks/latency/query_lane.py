"""Query latency during a bulk ingest: does a query's embedding wait behind document batches?

One engine, real model, real LanceDB, a store of ``--seed`` LoCoMo turns. Searches
(``Engine.search``, LoCoMo questions, each new: the embedding cache answers none) start
every ``--interval`` ms, as a loop or a few agents ask: ``--queries`` on the idle engine,
then as many as fit while one ``store_many`` of ``--ingest`` new items runs beside them (the
engine embeds it 256 texts per request: ~40 requests through the embedding actor, then one
write), then ``--queries`` idle again (the machine is shared: its load may change between
the phases, so the idle figures are of both idle phases together). Printed and written as
JSON: p50/p95/p99/max of the whole search and of its query embedding, idle and during the
ingest, their ratio against the goal (issue 42: p99 during a 10k-item ingest within 3x the
idle p99), the ingest's time and how many items it stored without a vector (a chunk that
waited past the embedding deadline), and the machine's load average sampled every second.

    python -m benchmarks.latency.query_lane --out benchmarks/latency/results/query_lane.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from benchmarks.latency.run import DEFAULT_DATA, load_corpus
from benchmarks.settings import store_settings
from ralph_context import Engine, NewItem, RetrievalResult

__all__ = ["GOAL", "measure"]

# Query p99 during the ingest over idle p99, at most.
GOAL = 3.0


def _summary(values: list[float]) -> dict[str, float | int]:
    data = np.asarray(values)
    return {
        "count": len(values),
        "p50_ms": round(float(np.percentile(data, 50)), 2),
        "p95_ms": round(float(np.percentile(data, 95)), 2),
        "p99_ms": round(float(np.percentile(data, 99)), 2),
        "max_ms": round(float(data.max()), 2),
    }


class Timings:
    """Each search's wall time and its query embedding's (``RetrievalResult``)."""

    def __init__(self) -> None:
        self.total: list[float] = []
        self.embedding: list[float] = []
        self.tiers: set[str] = set()

    async def search(self, engine: Engine, query: str, interval: float) -> None:
        """One search, then a pause until ``interval`` seconds after it started."""
        started = time.perf_counter()
        result: RetrievalResult = await engine.search(query)
        took = time.perf_counter() - started
        self.total.append(took * 1000)
        self.embedding.append(result.query_embedding_time_ms)
        self.tiers.add(result.tier.value)
        await anyio.sleep(max(0.0, interval - took))

    def report(self) -> dict[str, Any]:
        return {
            "search": _summary(self.total),
            "query_embedding": _summary(self.embedding),
            "tiers": sorted(self.tiers),
        }


async def _load_sampler(samples: list[float], stop: anyio.Event) -> None:
    while not stop.is_set():
        samples.append(os.getloadavg()[0])
        with anyio.move_on_after(1.0):
            await stop.wait()


def _text(texts: list[str], n: int) -> str:
    """The ``n``-th of endless distinct texts made of ``texts`` (a repeat gets a suffix: the
    embedding cache would answer it without the model)."""
    return texts[n % len(texts)] + ("" if n < len(texts) else f" (again, {n})")


async def measure(
    data: Path, *, seed: int, ingest: int, queries: int, interval: float
) -> dict[str, Any]:
    """The run described in the module's docstring."""
    corpus = load_corpus(data)
    questions = corpus.questions
    load: list[float] = []
    stop = anyio.Event()
    with tempfile.TemporaryDirectory(prefix="query-lane-") as tmp:
        settings = store_settings(Path(tmp) / "store", lifecycle={"auto_run": False})
        async with Engine(settings) as engine, anyio.create_task_group() as group:
            group.start_soon(_load_sampler, load, stop)
            for start in range(0, seed, 1000):
                texts = [_text(corpus.turns, n) for n in range(start, min(seed, start + 1000))]
                await engine.store_many([NewItem(text, "output") for text in texts])
            await engine.maintain()
            asked = 0  # every query is new: none is answered by the embedding cache
            for _ in range(20):  # warm-up: index caches, the query session's threads
                await engine.search(_text(questions, asked))
                asked += 1
            idle = Timings()
            for _ in range(queries):
                await idle.search(engine, _text(questions, asked), interval)
                asked += 1
            busy = Timings()
            entries = [NewItem(_text(corpus.turns, seed + n), "output") for n in range(ingest)]
            ingest_done = anyio.Event()
            ingest_s: list[float] = []

            async def run_ingest() -> None:
                started = time.perf_counter()
                try:
                    await engine.store_many(entries)
                finally:
                    ingest_s.append(time.perf_counter() - started)
                    ingest_done.set()

            group.start_soon(run_ingest)
            while not ingest_done.is_set():
                await busy.search(engine, _text(questions, asked), interval)
                asked += 1
            without_vector = engine.health().without_vector
            for _ in range(queries):
                await idle.search(engine, _text(questions, asked), interval)
                asked += 1
            stop.set()
    idle_report, busy_report = idle.report(), busy.report()
    ratio = busy_report["search"]["p99_ms"] / idle_report["search"]["p99_ms"]
    embed_ratio = (
        busy_report["query_embedding"]["p99_ms"] / idle_report["query_embedding"]["p99_ms"]
    )
    return {
        "machine": {
            "cpus": os.cpu_count(),
            "load_1min": {
                "min": round(min(load), 2),
                "mean": round(sum(load) / len(load), 2),
                "max": round(max(load), 2),
            },
        },
        "store_items_before": seed,
        "query_interval_ms": round(interval * 1000),
        "ingest": {
            "items": ingest,
            "seconds": round(ingest_s[0], 1),
            "stored_without_vector": without_vector,
        },
        "idle": idle_report,
        "during_ingest": busy_report,
        "p99_during_over_idle": round(ratio, 2),
        "embedding_p99_during_over_idle": round(embed_ratio, 2),
        "goal": f"p99 during ingest <= {GOAL:g}x idle p99",
        "goal_met": ratio <= GOAL,
    }


def _print(results: dict[str, Any]) -> None:
    for phase in ("idle", "during_ingest"):
        search, embedding = results[phase]["search"], results[phase]["query_embedding"]
        print(
            f"{phase:>14}: {search['count']:>5} searches  p50 {search['p50_ms']:7.1f}  "
            f"p95 {search['p95_ms']:7.1f}  p99 {search['p99_ms']:7.1f}  "
            f"max {search['max_ms']:7.1f} ms   query embedding p50 {embedding['p50_ms']:.1f}  "
            f"p99 {embedding['p99_ms']:.1f}  max {embedding['max_ms']:.1f} ms"
        )
    ingest, load = results["ingest"], results["machine"]["load_1min"]
    print(
        f"ingest of {ingest['items']:,} items took {ingest['seconds']} s "
        f"({ingest['stored_without_vector']} stored without a vector); "
        f"p99 during / idle = {results['p99_during_over_idle']}x "
        f"(embedding {results['embedding_p99_during_over_idle']}x; goal {GOAL:g}x: "
        f"{'met' if results['goal_met'] else 'NOT met'}); load average (1 min) "
        f"{load['min']}-{load['max']}, mean {load['mean']} on {results['machine']['cpus']} cpus"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON file")
    parser.add_argument("--seed", type=int, default=2_000, help="items stored first")
    parser.add_argument("--ingest", type=int, default=10_000, help="items of the bulk ingest")
    parser.add_argument("--queries", type=int, default=300, help="searches per idle phase")
    parser.add_argument(
        "--interval", type=float, default=100.0, help="ms from one search's start to the next"
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON file for the results")
    args = parser.parse_args()
    results = anyio.run(
        lambda: measure(
            args.data,
            seed=args.seed,
            ingest=args.ingest,
            queries=args.queries,
            interval=args.interval / 1000,
        )
    )
    _print(results)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
