"""Ingest rate and search latency of the engine, with the real model and real LanceDB.

Prints a table and writes ``results.json`` and ``latency.png`` to ``--out``.

1. Ingest: unique LoCoMo turns (real text nobody here wrote) stored through the engine, next
   to fastembed's raw throughput on the same texts in the same run (sorted by length, batch 32,
   its best configuration). Goal: engine >= 90% of raw.
2. Search: stores of 10k / 100k (optionally 1M) items, queried with LoCoMo questions through
   ``Engine.search`` — query embedding included, every query embedded for real. Goal: p99 <=
   25 ms at 100k on 2 cores. Embedding 100k texts takes ~30 min here, so large stores use the
   documented bulk path (``Engine.store_embedded``): a few thousand real turns are embedded
   once and the rest are clustered perturbations of those vectors (cosine ~0.8-0.95 to their
   base), each with its own content. Index quality is reported as recall@10 of the served
   results against exact brute-force search over the same vectors.

Usage: ``python benchmarks/latency/run.py --data ../shared/datasets/locomo/locomo_dev.json``
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from numpy.typing import NDArray

from ralph_context import ContextItem, ContextType, Engine, NewItem, Settings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared/datasets/locomo/locomo_dev.json"
TYPES = list(ContextType)


@dataclass(frozen=True)
class Corpus:
    turns: list[str]
    questions: list[str]


def load_corpus(path: Path) -> Corpus:
    conversations = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for conversation in conversations:
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                for turn in session:
                    text = f"{turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        text += f" [image: {turn['blip_caption']}]"
                    turns.append(text)
        questions.extend(str(qa["question"]) for qa in conversation["qa"])
    return Corpus(list(dict.fromkeys(turns)), list(dict.fromkeys(questions)))


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def settings_for(store: Path) -> Settings:
    return Settings.load(None).with_overrides(
        storage={"backend": "lancedb", "persistence": "project", "path": str(store)}
    )


# --- ingest ------------------------------------------------------------------------------


def raw_rate(embedder: LocalEmbedder, texts: list[str]) -> float:
    ordered = sorted(texts, key=len)
    started = time.perf_counter()
    for start in range(0, len(ordered), 32):
        embedder.embed(ordered[start : start + 32], 32)
    return len(texts) / (time.perf_counter() - started)


async def engine_rate(
    embedder: LocalEmbedder, texts: list[str], *, concurrent: int, workdir: Path
) -> float:
    """Items/s through ``Engine.store`` from ``concurrent`` producers (1 = ``store_many``)."""
    settings = settings_for(workdir)
    async with Engine(settings, model_loader=lambda _s: embedder) as engine:
        started = time.perf_counter()
        if concurrent == 1:
            for start in range(0, len(texts), 64):
                await engine.store_many(
                    [NewItem(t, ContextType.OUTPUT) for t in texts[start : start + 64]]
                )
        else:
            queue = list(texts)

            async def producer() -> None:
                while queue:
                    await engine.store(queue.pop(), ContextType.OUTPUT)

            async with anyio.create_task_group() as tg:
                for _ in range(concurrent):
                    tg.start_soon(producer)
        elapsed = time.perf_counter() - started
        assert (await engine.stats()).items == len(texts)
    return len(texts) / elapsed


# --- search ------------------------------------------------------------------------------


def perturb(
    bases: NDArray[np.float32], count: int, rng: np.random.Generator
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """``count`` vectors near randomly chosen bases: cosine to the base ~0.8-0.95."""
    chosen = rng.integers(0, len(bases), count)
    noise = rng.normal(size=(count, bases.shape[1])).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    scale = rng.uniform(0.33, 0.75, size=(count, 1)).astype(np.float32)
    vectors = bases[chosen] + scale * noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return chosen, vectors.astype(np.float32)


async def search_latency(
    embedder: LocalEmbedder,
    corpus: Corpus,
    bases: NDArray[np.float32],
    size: int,
    queries: int,
    workdir: Path,
    rng: np.random.Generator,
) -> dict[str, Any]:
    settings = settings_for(workdir)
    all_vectors = np.empty((size, bases.shape[1]), dtype=np.float32)
    ids: list[str] = []
    async with Engine(settings, model_loader=lambda _s: embedder) as engine:
        loaded = time.perf_counter()
        chunk = 10_000
        for start in range(0, size, chunk):
            count = min(chunk, size - start)
            if start == 0:
                base_count = min(len(bases), count)
                origin = np.arange(base_count)
                vectors = bases[:base_count]
                if count > base_count:
                    extra_origin, extra = perturb(bases, count - base_count, rng)
                    origin = np.concatenate([origin, extra_origin])
                    vectors = np.concatenate([vectors, extra])
            else:
                origin, vectors = perturb(bases, count, rng)
            items = [
                ContextItem(
                    content=corpus.turns[int(o)] + ("" if start + n < len(bases) else f" ({n})"),
                    content_type=TYPES[(start + n) % len(TYPES)],
                    tags=(f"session-{int(o) % 30}",),
                    created_iteration=(start + n) // 100,
                )
                for n, o in enumerate(origin)
            ]
            await engine.store_embedded(list(zip(items, vectors, strict=True)))
            all_vectors[start : start + count] = vectors
            ids.extend(item.id for item in items)
        load_s = time.perf_counter() - loaded
        maintained = time.perf_counter()
        await engine.maintain()
        maintain_s = time.perf_counter() - maintained
        stats = await engine.stats()
        picks = rng.choice(len(corpus.questions), size=queries, replace=False)
        await engine.search(corpus.questions[int(picks[0])], max_items=10, min_score=0.0)
        latencies: list[float] = []
        recalls: list[float] = []
        id_index = {item_id: n for n, item_id in enumerate(ids)}
        for pick in picks:
            question = corpus.questions[int(pick)]
            started = time.perf_counter()
            result = await engine.search(question, max_items=10, min_score=0.0)
            latencies.append((time.perf_counter() - started) * 1000)
            served = {id_index[hit.item.id] for hit in result.items}
            exact = np.argpartition(-(all_vectors @ embedder.embed([question], 1)[0]), 10)[:10]
            recalls.append(len(served & set(exact.tolist())) / 10)
        filtered: list[float] = []
        for pick in picks[: max(1, queries // 4)]:
            started = time.perf_counter()
            await engine.search(
                corpus.questions[int(pick)],
                max_items=10,
                min_score=0.0,
                context_types=[ContextType.ERROR, ContextType.SKILL],
            )
            filtered.append((time.perf_counter() - started) * 1000)
    return {
        "items": size,
        "vector_index": stats.vector_index,
        "size_mb": round(stats.size_bytes / 1e6, 1),
        "load_s": round(load_s, 1),
        "maintain_s": round(maintain_s, 1),
        "queries": queries,
        "p50_ms": round(percentile(latencies, 50), 2),
        "p99_ms": round(percentile(latencies, 99), 2),
        "mean_ms": round(statistics.fmean(latencies), 2),
        "filtered_p50_ms": round(percentile(filtered, 50), 2),
        "filtered_p99_ms": round(percentile(filtered, 99), 2),
        "recall_at_10_vs_exact": round(statistics.fmean(recalls), 3),
        "latencies_ms": [round(x, 3) for x in latencies],
    }


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4.5))
    ingest = results["ingest"]
    names = ["raw fastembed", "engine store_many", "engine 32 concurrent"]
    rates = [
        ingest["raw_items_per_s"],
        ingest["batch_items_per_s"],
        ingest["concurrent_items_per_s"],
    ]
    left.bar(names, rates, color=["#888", "#2a7", "#27a"])
    left.axhline(0.9 * ingest["raw_items_per_s"], ls="--", c="r", label="goal: 90% of raw")
    left.set_ylabel("items / s")
    left.set_title(f"ingest ({ingest['texts']} LoCoMo turns)")
    left.legend()
    left.tick_params(axis="x", labelsize=8)
    runs = results["search"]
    labels = [f"{r['items'] // 1000}k" for r in runs]
    x = np.arange(len(runs))
    middle.bar(x - 0.2, [r["p50_ms"] for r in runs], 0.4, label="p50")
    middle.bar(x + 0.2, [r["p99_ms"] for r in runs], 0.4, label="p99")
    middle.axhline(25, ls="--", c="r", label="goal p99 25 ms")
    middle.set_xticks(x, labels)
    middle.set_ylabel("ms (query embedding included)")
    middle.set_title("Engine.search latency")
    middle.legend()
    for run in runs:
        right.hist(run["latencies_ms"], bins=40, alpha=0.5, label=f"{run['items'] // 1000}k")
    right.set_xlabel("ms")
    right.set_title("search latency histogram")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


async def main(args: argparse.Namespace) -> None:
    corpus = load_corpus(args.data)
    embedder = load_embedder(Settings.load(None).embeddings)
    rng = np.random.default_rng(args.seed)
    random.seed(args.seed)
    texts = corpus.turns[: args.ingest]
    embedder.embed(texts[:64], 32)  # warm-up
    with tempfile.TemporaryDirectory(prefix="ralph-bench-") as tmp:
        work = Path(tmp)
        raw_before = raw_rate(embedder, texts)
        batch = await engine_rate(embedder, texts, concurrent=1, workdir=work / "batch")
        concurrent = await engine_rate(embedder, texts, concurrent=32, workdir=work / "conc")
        raw_after = raw_rate(embedder, texts)
        raw = (raw_before + raw_after) / 2
        ingest = {
            "texts": len(texts),
            "raw_items_per_s": round(raw, 1),
            "raw_runs": [round(raw_before, 1), round(raw_after, 1)],
            "batch_items_per_s": round(batch, 1),
            "concurrent_items_per_s": round(concurrent, 1),
            "batch_vs_raw": round(batch / raw, 3),
            "concurrent_vs_raw": round(concurrent / raw, 3),
        }
        print(
            f"ingest  raw {raw:.1f}/s  engine store_many {batch:.1f}/s ({batch / raw:.0%})  "
            f"engine 32 concurrent {concurrent:.1f}/s ({concurrent / raw:.0%})"
        )
        base_count = min(args.bases, len(corpus.turns))
        started = time.perf_counter()
        ordered = sorted(range(base_count), key=lambda i: len(corpus.turns[i]))
        bases = np.empty((base_count, embedder.dimension), dtype=np.float32)
        for start in range(0, base_count, 32):
            chunk = ordered[start : start + 32]
            bases[chunk] = embedder.embed([corpus.turns[i] for i in chunk], 32)
        print(f"embedded {base_count} base turns in {time.perf_counter() - started:.0f}s")
        search = []
        for size in args.sizes:
            run = await search_latency(
                embedder, corpus, bases, size, args.queries, work / f"s{size}", rng
            )
            search.append(run)
            print(
                f"search  {size:>8} items  p50 {run['p50_ms']:6.2f} ms  p99 {run['p99_ms']:6.2f} ms"
                f"  (type filter p99 {run['filtered_p99_ms']:.2f} ms)  index={run['vector_index']}"
                f"  recall@10 vs exact {run['recall_at_10_vs_exact']:.3f}"
                f"  load {run['load_s']}s maintain {run['maintain_s']}s  {run['size_mb']} MB"
            )
    results = {
        "machine": {"cpus": __import__("os").cpu_count()},
        "model": embedder.model_id,
        "seed": args.seed,
        "ingest": ingest,
        "search": search,
        "goals": {"ingest_vs_raw": 0.9, "p99_ms_at_100k": 25},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    plot(results, args.out / "latency.png")
    print(f"wrote {args.out / 'results.json'} and {args.out / 'latency.png'}")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON file")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--ingest", type=int, default=1000, help="texts for the ingest test")
    parser.add_argument("--bases", type=int, default=2760, help="real turns embedded for bulk")
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[10_000, 100_000],
        help="comma-separated store sizes",
    )
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args(argv)


if __name__ == "__main__":
    anyio.run(main, parse())
