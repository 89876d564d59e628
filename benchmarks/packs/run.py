"""Tool-pack latency: the pack operations an agent calls per iteration, at a realistic size.

Seeds ``--prompts`` prompts (each with one outcome) and ``--learnings`` learnings through
the same service code the MCP tools call, then times ``--queries`` calls of
``retrieve_prompts``, ``record_feedback`` (existing prompt), ``suggest_improvements``,
``get_analytics`` (all) and ``query_learnings`` (hybrid search and newest-first), embedding
included. Prints a table and writes ``results.json`` and ``latency.png`` to ``--out``.

    python -m benchmarks.packs.run --out benchmarks/packs/results
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from benchmarks.settings import store_settings
from ralph_context.engine import Engine
from ralph_context.packs.project.memory import ProjectMemory
from ralph_context.packs.prompts.metrics import Observation
from ralph_context.packs.prompts.service import PromptLearning
from ralph_context.packs.prompts.store import Feedback

TOPICS = (
    "database migrations",
    "flaky integration tests",
    "API rate limits",
    "memory leaks in workers",
    "CSS layout bugs",
    "slow SQL queries",
    "authentication tokens",
    "release automation",
)
SHAPES = (
    "Summarize what went wrong with {t}.",
    "You are a senior engineer. List the causes of {t}:\n1. cause\n2. evidence",
    "Explain step by step how to fix {t}. Answer in JSON with keys cause and fix.",
    "Give an example of {t} and how to avoid it. Do not exceed 100 words.",
)


def _percentiles(samples: list[float]) -> dict[str, float]:
    values = np.asarray(samples)
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p99_ms": round(float(np.percentile(values, 99)), 2),
        "mean_ms": round(float(values.mean()), 2),
    }


async def _timed(calls: int, make: Callable[[int], Awaitable[Any]]) -> dict[str, float]:
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        await make(i)
        samples.append((time.perf_counter() - started) * 1000)
    return _percentiles(samples)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as folder:
        settings = store_settings(Path(folder) / "store", lifecycle={"auto_run": False})
        async with Engine(settings) as engine:
            prompts = PromptLearning(
                engine, settings.packs.prompt_learning, settings.retrieval.min_similarity
            )
            project = ProjectMemory(engine)
            started = time.perf_counter()
            ids = []
            for i in range(args.prompts):
                topic = rng.choice(TOPICS)
                text = rng.choice(SHAPES).format(t=topic) + f" (case {i})"
                recorded = await prompts.record(
                    Feedback(
                        Observation(rng.random() < 0.6, latency_ms=rng.uniform(200, 900)),
                        prompt_text=text,
                        domain=topic.split()[0],
                    )
                )
                ids.append(recorded.record.id)
            seeded_prompts = time.perf_counter() - started
            started = time.perf_counter()
            for i in range(args.learnings):
                topic = rng.choice(TOPICS)
                await project.capture_learning(
                    title=f"Lesson {i} on {topic}",
                    problem=f"We hit {topic} during run {i}.",
                    solution=f"Check the {topic} runbook before retrying.",
                    tags=[topic.split()[0], f"run-{i % 7}"],
                    project_id=None,
                    cycle_id=None,
                    session_id=None,
                )
            seeded_learnings = time.perf_counter() - started
            queries = [f"how do we handle {rng.choice(TOPICS)}" for _ in range(args.queries)]
            results = {
                "retrieve_prompts": await _timed(
                    args.queries,
                    lambda i: prompts.retrieve(
                        queries[i], domain=None, top_k=5, min_performance=0.5
                    ),
                ),
                "record_feedback": await _timed(
                    args.queries,
                    lambda i: prompts.record(
                        Feedback(Observation(True), prompt_id=ids[i % len(ids)])
                    ),
                ),
                "suggest_improvements": await _timed(
                    args.queries, lambda i: prompts.suggest(queries[i], "all")
                ),
                "get_analytics": await _timed(
                    min(args.queries, 20),
                    lambda i: prompts.analytics(
                        domain=None, time_range="all", metrics=["success_rate"]
                    ),
                ),
                "query_learnings_search": await _timed(
                    args.queries,
                    lambda i: project.query_learnings(
                        tags=None, project_id=None, search=queries[i], limit=10
                    ),
                ),
                "query_learnings_recent": await _timed(
                    args.queries,
                    lambda i: project.query_learnings(
                        tags=["database"], project_id=None, search=None, limit=10
                    ),
                ),
            }
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "sizes": {"prompts": args.prompts, "learnings": args.learnings, "queries": args.queries},
        "seed_seconds": {
            "prompts": round(seeded_prompts, 2),
            "learnings": round(seeded_learnings, 2),
        },
        "latency": results,
    }


def _plot(results: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["latency"])
    p50 = [results["latency"][n]["p50_ms"] for n in names]
    p99 = [results["latency"][n]["p99_ms"] for n in names]
    figure, axis = plt.subplots(figsize=(9, 4))
    positions = np.arange(len(names))
    axis.bar(positions - 0.2, p50, 0.4, label="p50")
    axis.bar(positions + 0.2, p99, 0.4, label="p99")
    axis.set_xticks(positions, names, rotation=20, ha="right")
    axis.set_ylabel("ms per call (embedding included)")
    sizes = results["sizes"]
    axis.set_title(f"Tool packs at {sizes['prompts']} prompts / {sizes['learnings']} learnings")
    axis.legend()
    figure.tight_layout()
    path = out / "latency.png"
    figure.savefig(path, dpi=120)
    return path


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--prompts", type=int, default=1000)
    parser.add_argument("--learnings", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/packs/results"))
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse()
    measured = anyio.run(main, arguments)
    arguments.out.mkdir(parents=True, exist_ok=True)
    (arguments.out / "results.json").write_text(json.dumps(measured, indent=2) + "\n")
    for name, row in measured["latency"].items():
        print(f"{name:24} p50 {row['p50_ms']:8.2f} ms   p99 {row['p99_ms']:8.2f} ms")
    print(f"seeding: {measured['seed_seconds']}")
    print(f"wrote {_plot(measured, arguments.out)}")
