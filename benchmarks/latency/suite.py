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

import os
import resource
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
from benchmarks.latency.phases import Phases, failures
from benchmarks.latency.report import NO_PLOT, markdown, write_outputs
from benchmarks.latency.run import Corpus, load_corpus, load_store
from benchmarks.latency.targets import TARGETS, summary
from benchmarks.settings import store_settings
from ralph_context import Engine, Settings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.storage.table.uring import kernel_allows, uring_uri
from ralph_context.storage.table.vectors import probes

__all__ = ["NO_PLOT", "TARGETS", "markdown", "measure", "write_outputs"]

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
    config = write_config(store)
    phase = Phases(run, tick)

    async def engine_phase() -> None:
        run["engine"], run["rss_mb"] = await engine_search(store, embedder, questions)

    async def http_phase() -> None:
        single, eight, run["server_rss_mb"] = await clients_over_http(config, questions)
        run["http"], run["http8"] = stats(single), stats(eight)
        run["agent_hook"] = await anyio.to_thread.run_sync(
            agent_hooks, config, work / f"agent-{size}", questions[:50]
        )

    async def hook_phase(mode: str) -> dict[str, list[float]]:
        return await run_hook(
            store,
            embedder,
            corpus.turns,
            iterations=hook_iterations,
            mode=mode,
            agent_ms=agent_ms if mode == "loop" else 0,
            workdir=work / f"hook-{mode[0]}{size}",
            first_iteration=latest + 1,
        )

    async def retrieval_phase() -> None:
        run["hook"] = stats((await hook_phase("retrieval"))["retrieval"])

    async def loop_phase() -> None:
        loop = await hook_phase("loop")
        run["hook_loop"] = {"retrieval": stats(loop["retrieval"]), "store": stats(loop["store"])}
        run["hook_loop"]["agent_ms"] = agent_ms

    async def floor_phase() -> None:
        run["floor"] = await anyio.to_thread.run_sync(floor, store, embedder, questions)

    async def stdio_phase() -> None:
        run["stdio"] = stats(await over_stdio(config, questions))

    async def hook_v2_phase() -> None:
        # Ralph v2's hook: a process per call; at the first size only (a call loads the
        # model when it opens the store itself, ~3-4 s).
        if hook_v2_calls:
            run["hook_v2"] = await anyio.to_thread.run_sync(
                hook_v2_latency, store, work, questions[:hook_v2_calls]
            )

    await phase("floor", floor_phase)
    await phase("engine", engine_phase)
    await phase("stdio", stdio_phase)
    await phase("http and agent hook", http_phase)
    await phase("hook", retrieval_phase)
    await phase("hook in the loop", loop_phase, tick=False)
    await phase("Ralph v2 hook", hook_v2_phase)
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
        ingest_rates: dict[str, Any] = {}

        async def ingest_phase() -> None:
            ingest_rates.update(await ingest(corpus, embedder, work, ingest_texts))

        await Phases(ingest_rates, tick, "the whole run")("MCP ingest", ingest_phase)
        runs: list[dict[str, Any]] = []
        for size in sizes:
            run: dict[str, Any] = {"items": size}

            async def sized(size: int = size, run: dict[str, Any] = run) -> None:
                run.update(
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
                        # ~4 s a call opening the store: 10 at the first size, 2 for a
                        # small run.
                        hook_v2_calls=min(10, max(2, queries // 20)) if size == sizes[0] else 0,
                        anchors=anchors,
                    )
                )

            # Its phases are guarded one by one; what escapes is the store's load.
            await Phases(run, tick)("store", sized, tick=False)
            runs.append(run)
    return {
        "machine": {"cpus": os.cpu_count(), "load_after": [round(x, 2) for x in os.getloadavg()]},
        "model": embedder.model_id,
        "queries": queries,
        "hook_iterations": hook_iterations,
        "code": code,
        "ingest": {k: v for k, v in ingest_rates.items() if k != "failed"},
        "runs": runs,
        "summary": summary(runs),
        "failed": failures(runs, ingest_rates),
        "targets": TARGETS,
    }
