"""What the engine adds on top of a language model server, and what model summaries cost a
lifecycle pass.

The server is the tests' OpenAI-compatible fake (``tests/inference/fake_openai.py``) on a
real local socket, answering at once, so no model's time is in the numbers: they are the
engine's own work (actor queue, httpx, SSE parsing, tool-call assembly) plus the fake's. The
fake is a thread of the same process, sharing its GIL and the 2 cores, so the numbers are an
upper bound on what the engine adds. A real model's generation time comes on top, one to
three orders of magnitude larger.

1. ``complete`` round trips through the inference actor: ``--calls`` sequential calls with a
   streamed reply of ``--pieces`` deltas (p50/p99), then the same number with 16 in flight
   (throughput).
2. A lifecycle pass summarizing ``--items`` long items, extractive (sentence embeddings and
   centroid) against ``lifecycle.summarizer_model`` (the fake's instant reply).

Prints a table and writes ``results.json`` to ``--out``.

    python -m benchmarks.inference.run --out benchmarks/inference/results
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from benchmarks.settings import store_settings
from ralph_context.engine import Engine
from ralph_context.models import IterationResult
from tests.inference.fake_openai import FakeOpenAI, Text

MODEL = "bench-model"
REPORT = (
    "Iteration {n}: the integration stage of build {n} failed because the payments service "
    "could not reach its database. The connection pool was exhausted after a leak in the "
    "refund handler. Raising the pool size from 10 to 40 in config/db.yaml made the tests "
    "pass. The dashboard colours were tweaked too, unrelated. An alert on pool saturation "
    "now pages someone. Lunch was pizza. The root cause was fixed in commit {n:04x}."
)
SUMMARY = "Build failed on an exhausted DB pool; raised it to 40 and fixed the refund leak."


def _settings(store: Path, url: str, summarizer: str | None) -> Any:
    return store_settings(
        store,
        lifecycle={
            "auto_run": False,
            "aging_after_iterations": 1,
            "summarize_after_iterations": 3,
            "archive_after_iterations": 50,
            "prune_after_iterations": 100,
            "summarizer_model": summarizer,
        },
        inference={
            "servers": [{"kind": "lmstudio", "base_url": url, "max_concurrency": 16}],
            "register_from_env": False,
        },
    )


def _percentiles(samples: list[float]) -> dict[str, float]:
    values = np.asarray(samples)
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p99_ms": round(float(np.percentile(values, 99)), 2),
        "mean_ms": round(float(values.mean()), 2),
    }


async def _round_trips(
    engine: Engine, calls: int, pieces: int, server: FakeOpenAI
) -> dict[str, Any]:
    messages = [{"role": "user", "content": "Say something."}]
    reply = Text(" ".join(f"word{n}" for n in range(pieces)), pieces=pieces)
    server.script(*[reply] * 10)
    for _ in range(10):  # warm the connection pool and the manifest
        await engine.inference.complete(MODEL, messages, max_tokens=64)
    server.script(*[reply] * calls)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await engine.inference.complete(MODEL, messages, max_tokens=64)
        samples.append((time.perf_counter() - started) * 1000)
    server.script(*[reply] * calls)
    started = time.perf_counter()
    limiter = anyio.CapacityLimiter(16)

    async def one() -> None:
        async with limiter:
            await engine.inference.complete(MODEL, messages, max_tokens=64)

    async with anyio.create_task_group() as tg:
        for _ in range(calls):
            tg.start_soon(one)
    elapsed = time.perf_counter() - started
    return {
        "sequential": _percentiles(samples),
        "concurrent_16": {"calls_per_second": round(calls / elapsed, 1)},
    }


async def _lifecycle_pass(
    store: Path, url: str, summarizer: str | None, items: int, server: FakeOpenAI
) -> dict[str, Any]:
    server.script(*[Text(SUMMARY)] * items)
    async with Engine(_settings(store, url, summarizer)) as engine:
        for n in range(items):
            await engine.store(REPORT.format(n=n), "iteration", iteration=0)
        await engine.record_iteration(IterationResult(iteration=4, success=True, summary="tick"))
        started = time.perf_counter()
        report = await engine.summarize_old(3)
        elapsed = time.perf_counter() - started
    return {
        "summarizer": report.summarizer,
        "items": len(report.summarized),
        "seconds": round(elapsed, 2),
        "ms_per_item": round(elapsed * 1000 / max(1, len(report.summarized)), 1),
        "chars_saved": report.chars_saved,
        "notes": list(report.notes),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with FakeOpenAI([MODEL], name="bench") as server, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        async with Engine(_settings(root / "calls", server.url, None)) as engine:
            trips = await _round_trips(engine, args.calls, args.pieces, server)
        extractive = await _lifecycle_pass(root / "a", server.url, None, args.items, server)
        by_model = await _lifecycle_pass(root / "b", server.url, MODEL, args.items, server)
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "complete": {"calls": args.calls, "pieces": args.pieces, **trips},
        "lifecycle_pass": {"extractive": extractive, "model": by_model},
    }


def _print(results: dict[str, Any]) -> None:
    trips = results["complete"]
    seq = trips["sequential"]
    print(f"complete(), {trips['calls']} calls, {trips['pieces']}-delta stream, instant server:")
    print(f"  sequential  p50 {seq['p50_ms']} ms  p99 {seq['p99_ms']} ms  mean {seq['mean_ms']} ms")
    print(f"  16 in flight  {trips['concurrent_16']['calls_per_second']} calls/s")
    print("lifecycle pass:")
    for name, run in results["lifecycle_pass"].items():
        print(
            f"  {name:<10} {run['items']} items  {run['seconds']} s  "
            f"{run['ms_per_item']} ms/item  summarizer={run['summarizer']!r}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--pieces", type=int, default=50)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/inference/results"))
    arguments = parser.parse_args()
    results = anyio.run(partial(main, arguments))
    _print(results)
    arguments.out.mkdir(parents=True, exist_ok=True)
    (arguments.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
