"""What each installed embedding model costs: disk, memory, query time and throughput.

For each model named (each in a fresh process, so one model's memory is not the next's):
the model folder's size on disk; the process's RSS once the model is loaded as a server
loads it (the query session only) and after a bulk batch (the bulk session loads on its
first); a query's embedding time, p50 / p99 over the paraphrase set's questions, one at a
time as a search embeds them; texts per second for batches of 64 store items (~200
characters, as a loop stores them); and whether a text's vector depends on the batch beside
it (cosine of each text alone against in a batch of 64: the reason dynamic int8 was
refused). The README's model table is this command's output.

    python -m benchmarks.model.costs all-MiniLM-L6-v2 all-mpnet-base-v2 --out DIR
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["measure", "table"]


def _texts() -> tuple[list[str], list[str]]:
    from benchmarks.retrieval.paraphrase_data import STORES

    queries = [query.text for store in STORES for query in store.queries]
    items = [item.content for store in STORES for item in store.items]
    return queries, items


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(model: str, repeats: int = 3, queries: int | None = None) -> dict[str, Any]:
    """One model's costs, measured in this process."""
    from ralph_context.config import EmbeddingsSettings
    from ralph_context.embeddings.local import load_embedder

    settings = EmbeddingsSettings(model=model)
    folder = settings.resolved_model_path()
    disk = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    before = _rss_mb()
    started = time.perf_counter()
    embedder = load_embedder(settings)
    load_s = time.perf_counter() - started
    asked, items = _texts()
    asked = asked[:queries]
    for query in asked[:5]:  # warm-up
        embedder.embed([query], 1, query=True)
    query_ms = []
    for query in asked:
        started = time.perf_counter()
        embedder.embed([query], 1, query=True)
        query_ms.append((time.perf_counter() - started) * 1000)
    serving = _rss_mb()
    batch = [item for item in items if 120 <= len(item) <= 300][:64]
    embedder.embed(batch, 32)  # the bulk session's first batch loads it
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        embedder.embed(batch, 32)
        rates.append(len(batch) / (time.perf_counter() - started))
    alone = np.vstack([embedder.embed([text], 1, query=True) for text in batch])
    together = embedder.embed(batch, 64)
    return {
        "model": model,
        "model_id": embedder.model_id,
        "dimension": embedder.dimension,
        "disk_mb": round(disk / 1e6, 1),
        "load_s": round(load_s, 2),
        "rss_mb_serving": round(serving - before, 1),
        "rss_mb_after_bulk": round(_rss_mb() - before, 1),
        "query_ms_p50": round(statistics.median(query_ms), 2),
        "query_ms_p99": round(float(np.percentile(query_ms, 99)), 2),
        "queries": len(query_ms),
        "texts_per_s": round(statistics.median(rates), 1),
        "batch_texts": len(batch),
        "batch_mean_chars": round(statistics.mean(len(text) for text in batch)),
        "alone_vs_batch_min_cosine": round(float((alone * together).sum(axis=1).min()), 6),
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The README's table of what each model costs."""
    lines = [
        "| model | dims | disk | RSS serving / after a bulk batch | query p50 / p99 | "
        "texts/s (64 texts of ~200 chars) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines.extend(
        f"| {row['model']} | {row['dimension']} | {row['disk_mb']:.0f} MB | "
        f"{row['rss_mb_serving']:.0f} / {row['rss_mb_after_bulk']:.0f} MB | "
        f"{row['query_ms_p50']:.1f} / {row['query_ms_p99']:.1f} ms | "
        f"{row['texts_per_s']:.1f} |"
        for row in rows
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="installed models, by name")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/model/results"))
    parser.add_argument("--queries", type=int, help="only the first N questions (default: all)")
    parser.add_argument("--repeats", type=int, default=3, help="timed bulk batches")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # the child: one model, its figures on stdout
        print(json.dumps(measure(args.models[0], args.repeats, args.queries)))
        return
    rows = []
    for model in args.models:
        extra = ["--repeats", str(args.repeats)]
        extra += ["--queries", str(args.queries)] if args.queries else []
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.model.costs", "--one", model, *extra],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    load = Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3]
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"load_after": [float(x) for x in load], "models": rows}
    (args.out / "costs.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table(rows))
    print(f"load after: {' '.join(load)}")


if __name__ == "__main__":
    main()
