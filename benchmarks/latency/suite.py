"""``ralph-context bench latency``: every face's latency on the same stores, in one run.

For each store size (real LoCoMo turns, the rest through the bulk path as in ``run.py``):

- ``floor``: what the parts cost alone, per query: fastembed embedding the query, then
  Lance's vector top-40 and full-text top-20 on the same table (raw calls, one after the
  other, through the library calls a search makes: the sum is the floor an engine doing
  both halves cannot beat on one core);
- ``engine``: ``Engine.search`` with default settings;
- ``stdio`` / ``http`` / ``http8``: ``tools/call get_relevant_context`` through the official
  MCP client, over stdio, streamable HTTP, and 8 HTTP clients at once;
- ``hook`` / ``hook_loop``: the Ralph hook's retrieval per iteration, alone and in a
  realistic loop (results stored, lifecycle on; see ``hook_loop.py``);

plus the process's RSS, the store's size on disk, and MCP ingest rates (``store_context``
one by one, ``store_contexts`` in batches) against the model's own rate on the same texts.
``summary`` in results.json holds the issue's keys (milliseconds unless named).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import lance
import numpy as np
from lance.query import MatchQuery as LanceMatch

from benchmarks.latency.agent_hook import agent_hooks
from benchmarks.latency.code_repo import Anchors, age_the_code, code_repository
from benchmarks.latency.hook_loop import run_hook
from benchmarks.latency.hook_v2 import hook_v2_latency
from benchmarks.latency.mcp_latency import (
    clients_over_http,
    ingest_over_stdio,
    over_stdio,
    process_rss_mb,
    write_config,
)
from benchmarks.latency.run import Corpus, load_corpus, load_store
from benchmarks.latency.targets import TARGETS, summary
from benchmarks.settings import store_settings
from ralph_context import Engine, Settings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.storage.table.uring import kernel_allows, uring_uri
from ralph_context.storage.table.vectors import probes

__all__ = ["NO_PLOT", "TARGETS", "markdown", "measure", "write_outputs"]

NO_PLOT = (
    "latency.png not drawn: matplotlib is missing (pip install 'ralph-context[bench]'); "
    "results.json and results.md are written"
)
Tick = Callable[[], None]


def stats(values: Sequence[float]) -> dict[str, float]:
    array = np.asarray(values, dtype=np.float64)
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(array, 50)), 2),
        "p95_ms": round(float(np.percentile(array, 95)), 2),
        "p99_ms": round(float(np.percentile(array, 99)), 2),
    }


def rss_mb() -> float:
    """Resident memory of this process now (Linux), else its peak."""
    return process_rss_mb(os.getpid()) or round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
    )


def floor(store: Path, embedder: LocalEmbedder, questions: list[str]) -> dict[str, Any]:
    """Raw query embedding, raw Lance vector and full-text queries, per question: the same
    library calls a search makes (``storage.table.uring``: the table as a Lance dataset, through
    io_uring where the kernel allows it), without the engine around them."""
    path = store / "context_items.lance"
    dataset = lance.dataset(uring_uri(path) if kernel_allows() else str(path))
    visits = probes(dataset.count_rows())
    parts: dict[str, list[float]] = {"embed": [], "vector": [], "text": [], "sum": []}
    for question in questions:
        started = time.perf_counter()
        vector = embedder.embed([question], 1)[0]
        embedded = time.perf_counter()
        nearest = {"column": "vector", "q": vector, "k": 40, "nprobes": visits, "metric": "cosine"}
        dataset.scanner(nearest=nearest).to_table()
        searched = time.perf_counter()
        dataset.scanner(full_text_query=LanceMatch(question, "content"), limit=20).to_table()
        done = time.perf_counter()
        for key, seconds in (
            ("embed", embedded - started),
            ("vector", searched - embedded),
            ("text", done - searched),
            ("sum", done - started),
        ):
            parts[key].append(seconds * 1000)
    return {key: stats(values) for key, values in parts.items()}


async def engine_search(
    store: Path, embedder: LocalEmbedder, questions: list[str]
) -> tuple[dict[str, Any], float]:
    """``Engine.search`` per question (wall), with ``cpu_ms``: this process's CPU time over
    the searches (every thread: the model's, LanceDB's, ours) per search; and the RSS."""
    settings = store_settings(store, lifecycle={"auto_run": False}, skillbook={"enabled": False})
    async with Engine(settings, model_loader=lambda _s: embedder) as engine:
        for n in range(10):  # warm-up, with queries not timed below (no cache hits)
            await engine.search(f"warm-up {n}: what did they plan")
        latencies = []
        cpu_started = time.process_time()
        for question in questions:
            started = time.perf_counter()
            await engine.search(question)
            latencies.append((time.perf_counter() - started) * 1000)
        cpu_ms = (time.process_time() - cpu_started) * 1000 / max(len(questions), 1)
        return {**stats(latencies), "cpu_ms": round(cpu_ms, 2)}, rss_mb()


async def one_size(
    size: int,
    corpus: Corpus,
    embedder: LocalEmbedder,
    bases: np.ndarray[Any, Any],
    work: Path,
    *,
    queries: int,
    hook_iterations: int,
    agent_ms: float,
    tick: Tick,
    hook_v2_calls: int = 0,
    anchors: Anchors | None = None,
) -> dict[str, Any]:
    rng = np.random.default_rng(size)
    store = work / f"s{size}"
    settings = store_settings(store, lifecycle={"auto_run": False}, skillbook={"enabled": False})
    tied = anchors.of if anchors is not None else None
    async with Engine(settings, model_loader=lambda _s: embedder) as engine:
        await load_store(engine, corpus, bases, size, rng, tied)
        await engine.maintain()
        with_versions = await engine.size_bytes()
        # What the store settles at once the retention window has passed (no reader here
        # needs the old versions): the size a user sees five minutes after the load.
        await engine.maintain(reclaim=True)
        settled = await engine.size_bytes()
        latest = engine.current_iteration
    tick()
    # Distinct questions (at most as many as the data has): a repeated one would be served
    # from the embedding cache.
    picks = rng.choice(
        len(corpus.questions), size=min(queries, len(corpus.questions)), replace=False
    )
    questions = [corpus.questions[int(p)] for p in picks]
    run: dict[str, Any] = {
        "items": size,
        "store_mb": round(settled / 1e6, 1),
        "store_mb_before_cleanup": round(with_versions / 1e6, 1),
    }
    run["floor"] = await anyio.to_thread.run_sync(floor, store, embedder, questions)
    tick()
    run["engine"], run["rss_mb"] = await engine_search(store, embedder, questions)
    tick()
    config = write_config(store)
    run["stdio"] = stats(await over_stdio(config, questions))
    tick()
    single, eight, run["server_rss_mb"] = await clients_over_http(config, questions)
    run["http"], run["http8"] = stats(single), stats(eight)
    run["agent_hook"] = await anyio.to_thread.run_sync(
        agent_hooks, config, work / f"agent-{size}", questions[:50]
    )
    tick()
    turns = corpus.turns
    retrieval = await run_hook(
        store,
        embedder,
        turns,
        iterations=hook_iterations,
        mode="retrieval",
        agent_ms=0,
        workdir=work / f"hook-r{size}",
        first_iteration=latest + 1,
    )
    run["hook"] = stats(retrieval["retrieval"])
    tick()
    loop = await run_hook(
        store,
        embedder,
        turns,
        iterations=hook_iterations,
        mode="loop",
        agent_ms=agent_ms,
        workdir=work / f"hook-l{size}",
        first_iteration=latest + 1,
    )
    run["hook_loop"] = {"retrieval": stats(loop["retrieval"]), "store": stats(loop["store"])}
    run["hook_loop"]["agent_ms"] = agent_ms
    if hook_v2_calls:
        # Ralph v2's hook: a process per call; at the first size only (a call loads the
        # model when it opens the store itself, ~3-4 s).
        run["hook_v2"] = await anyio.to_thread.run_sync(
            hook_v2_latency, store, work, questions[:hook_v2_calls]
        )
    tick()
    return run


async def ingest(corpus: Corpus, embedder: LocalEmbedder, work: Path, count: int) -> dict[str, Any]:
    """MCP ingest over stdio on a fresh store, beside the model's rate on the same texts
    (length-sorted batches of 32, as the engine embeds), in alternated rounds."""

    def raw(texts: list[str]) -> float:
        ordered = sorted(texts, key=len)
        started = time.perf_counter()
        for start in range(0, len(ordered), 32):
            embedder.embed(ordered[start : start + 32], 32)
        return len(texts) / (time.perf_counter() - started)

    texts = corpus.turns[:count]
    store = work / "ingest"
    async with Engine(store_settings(store), model_loader=lambda _s: embedder):
        pass  # creates the store with this model's record
    single, model, batch = await ingest_over_stdio(write_config(store), texts, raw)
    raw_rate, batch_rate = float(np.median(model)), float(np.median(batch))
    return {
        "texts": len(texts),
        "rounds": len(batch),
        "raw_items_per_s": round(raw_rate, 1),
        "mcp_single_items_per_s": round(single, 1),
        "mcp_batch_items_per_s": round(batch_rate, 1),
        "batch_vs_raw": round(batch_rate / raw_rate, 3),
        "raw_rounds": [round(x, 1) for x in model],
        "batch_rounds": [round(x, 1) for x in batch],
    }


async def measure(
    data: Path,
    *,
    sizes: Sequence[int],
    queries: int,
    hook_iterations: int,
    agent_ms: float,
    ingest_texts: int,
    progress: Callable[[int], Tick],
) -> dict[str, Any]:
    corpus = load_corpus(data)
    embedder = load_embedder(Settings.load(None).embeddings)
    tick = progress(1 + 7 * len(sizes))
    base_count = min(2760, len(corpus.turns))
    ordered = sorted(range(base_count), key=lambda i: len(corpus.turns[i]))
    bases = np.empty((base_count, embedder.dimension), dtype=np.float32)
    for start in range(0, base_count, 32):
        chunk = ordered[start : start + 32]
        bases[chunk] = embedder.embed([corpus.turns[i] for i in chunk], 32)
    with tempfile.TemporaryDirectory(prefix="ralph-latency-") as tmp:
        work = Path(tmp)
        # The memory is about a codebase that moved on since (``code_repo``): the pushes
        # check every item's files, as in a project.
        anchors = Anchors(code_repository(work))
        code = age_the_code(work, np.random.default_rng(0))
        ingest_rates = await ingest(corpus, embedder, work, ingest_texts)
        tick()
        runs = [
            await one_size(
                size,
                corpus,
                embedder,
                bases,
                work,
                queries=queries,
                hook_iterations=hook_iterations,
                agent_ms=agent_ms,
                tick=tick,
                # ~4 s a call opening the store: 10 at the first size, 2 for a small run.
                hook_v2_calls=min(10, max(2, queries // 20)) if size == sizes[0] else 0,
                anchors=anchors,
            )
            for size in sizes
        ]
    return {
        "machine": {"cpus": os.cpu_count(), "load_after": [round(x, 2) for x in os.getloadavg()]},
        "model": embedder.model_id,
        "queries": queries,
        "hook_iterations": hook_iterations,
        "code": code,
        "ingest": ingest_rates,
        "runs": runs,
        "summary": summary(runs),
        "targets": TARGETS,
    }


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| items | floor p50 | engine p50/p99 | stdio p50/p99 | http p50/p99 | "
        "8 http clients p50/p99 | hook p50/p99 | hook in loop p50/p99 (store p50/p99) "
        "| store MB | RSS MB | server RSS MB | CPU ms/search |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in results["runs"]:

        def pair(face: dict[str, Any]) -> str:
            return f"{face['p50_ms']:.1f} / {face['p99_ms']:.1f}"

        loop = run["hook_loop"]
        lines.append(
            f"| {run['items']:,} | {run['floor']['sum']['p50_ms']:.1f} | {pair(run['engine'])} | "
            f"{pair(run['stdio'])} | {pair(run['http'])} | {pair(run['http8'])} | "
            f"{pair(run['hook'])} | {pair(loop['retrieval'])} ({pair(loop['store'])}) | "
            f"{run['store_mb']} | {run['rss_mb']} | {run['server_rss_mb']} | "
            f"{run['engine']['cpu_ms']} |"
        )
    ingest_rates = results["ingest"]
    lines += [
        "",
        f"MCP ingest ({ingest_rates['texts']} LoCoMo turns): store_context "
        f"{ingest_rates['mcp_single_items_per_s']}/s, store_contexts "
        f"{ingest_rates['mcp_batch_items_per_s']}/s, the model alone "
        f"{ingest_rates['raw_items_per_s']}/s (batch = {ingest_rates['batch_vs_raw']:.0%}).",
        "",
        "| summary key | measured | target |",
        "|---|---:|---:|",
    ]
    for key, value in results["summary"].items():
        lines.append(
            f"| `{key}` | {value if value is not None else '—'} | {TARGETS.get(key, '')} |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    """results.json and results.md first, then latency.png when matplotlib is installed."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(results), encoding="utf-8")
    try:
        import matplotlib
    except ImportError:
        print(NO_PLOT, file=sys.stderr)
        return paths
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    faces = ["floor", "engine", "stdio", "http", "http8", "hook", "hook_loop"]
    fig, axis = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / max(1, len(results["runs"]))
    for n, run in enumerate(results["runs"]):
        values = [
            run["floor"]["sum"]["p99_ms"]
            if face == "floor"
            else run[face]["retrieval"]["p99_ms"]
            if face == "hook_loop"
            else run[face]["p99_ms"]
            for face in faces
        ]
        x = np.arange(len(faces)) + n * width
        axis.bar(x, values, width, label=f"{run['items']:,} items")
    axis.set_xticks(np.arange(len(faces)) + width * (len(results["runs"]) - 1) / 2, faces)
    axis.set_ylabel("p99 ms")
    axis.set_title("p99 latency per face (floor: raw embedding + vector + full-text)")
    axis.legend()
    fig.tight_layout()
    paths.append(out / "latency.png")
    fig.savefig(paths[2], dpi=110)
    plt.close(fig)
    return paths
