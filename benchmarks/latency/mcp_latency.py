"""``get_relevant_context`` latency through the official MCP client, over stdio and HTTP.

Builds stores of 10k / 100k items exactly as ``run.py`` does (real LoCoMo turns, bulk path for
the rest), then starts ``ralph-context serve`` as a subprocess on each store and times the
full round trip of ``tools/call get_relevant_context`` with LoCoMo questions: JSON-RPC,
validation, query embedding, hybrid search, scoring, budget and the structured reply.
Goal: p99 <= 40 ms at 100k over stdio (seed target < 100 ms).

Prints a table and writes ``mcp_results.json`` to ``--out``.

Usage (from the repository root): ``python -m benchmarks.latency.mcp_latency``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp
import numpy as np
from mcp import MCPError, StdioServerParameters

from benchmarks.latency.run import (
    add_store_arguments,
    load_corpus,
    load_store,
    percentile,
)
from benchmarks.serving import free_port, owner_token_of, wait_until_serving
from benchmarks.settings import store_settings
from ralph_context import Engine, Settings
from ralph_context.embeddings.local import load_embedder
from ralph_context.server.connect import connect

SERVE = [sys.executable, "-m", "ralph_context", "serve"]


def write_config(store: Path) -> Path:
    """A server's config for ``store``, with this run's embedding model (``bench latency
    --config``): the store was filled with it, and another would be refused."""
    config = store.parent / f"{store.name}.yaml"
    config.write_text(
        f"learning:\n  mcp_context:\n    storage:\n      path: {store}\n"
        "    lifecycle:\n      auto_run: false\n" + embeddings_yaml(),
        encoding="utf-8",
    )
    return config


def embeddings_yaml() -> str:
    """This run's ``embeddings`` section (under ``learning.mcp_context``), for every
    config a phase writes: a hook or server on the default model would refuse the store."""
    embeddings = Settings.load(None).embeddings
    return (
        f"    embeddings:\n      model: {embeddings.model}\n"
        f"      timeout_seconds: {embeddings.timeout_seconds}\n"
        + (f"      model_path: {embeddings.model_path}\n" if embeddings.model_path else "")
    )


# Refusals a client retries after the server's Retry-After (HTTP 429: its adaptive limit on
# calls in flight lowers itself when calls get slow, as on a loaded machine).
_BUSY = ("the server is answering all it can", "rate limit")


async def _ask(client: mcp.Client, query: str) -> Any:
    """``get_relevant_context``, retried while the server says it is busy (a client's view:
    the wait counts in the latency)."""
    for _ in range(60):
        try:
            return await client.call_tool("get_relevant_context", {"query": query})
        except MCPError as error:
            if not str(error).startswith(_BUSY):
                raise
            await anyio.sleep(1.0)
    raise AssertionError(f"the server stayed busy for a minute: {query!r}")


async def time_queries(client: mcp.Client, questions: list[str]) -> list[float]:
    for n in range(3):  # warm-up: first-call paths, with queries not timed below
        await _ask(client, f"warm-up {n}: who said it")
    latencies = []
    for question in questions:
        started = time.perf_counter()
        result = await _ask(client, question)
        latencies.append((time.perf_counter() - started) * 1000)
        assert not result.is_error
    return latencies


async def over_stdio(config: Path, questions: list[str]) -> list[float]:
    env = {**os.environ, "RALPH_CONTEXT_CONFIG": str(config)}
    params = StdioServerParameters(command=SERVE[0], args=SERVE[1:], env=env)
    async with mcp.Client(params) as client:
        return await time_queries(client, questions)


def process_rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` now, in MB (Linux; 0.0 where unreadable)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def start_http(config: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``serve --transport http`` and wait until it answers."""
    port = free_port()
    env = {**os.environ, "RALPH_CONTEXT_CONFIG": str(config)}
    process = subprocess.Popen(
        [*SERVE, "--transport", "http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    wait_until_serving(url, process)
    return process, url


async def over_http(config: Path, questions: list[str]) -> list[float]:
    process, url = await anyio.to_thread.run_sync(start_http, config)
    try:
        async with connect(url, owner_token_of(config)) as client:
            return await time_queries(client, questions)
    finally:
        process.terminate()
        await anyio.to_thread.run_sync(lambda: process.wait(timeout=60))


async def clients_over_http(
    config: Path, questions: list[str], clients: int = 8
) -> tuple[list[float], list[float], float]:
    """One server: ``questions`` from one client, then spread over ``clients`` at once;
    and the server process's own resident memory (MB) after both (issue 41's
    ``server_rss_mb``: what a user's long-running server holds, its upkeep worker aside)."""
    process, url = await anyio.to_thread.run_sync(start_http, config)
    try:
        token = owner_token_of(config)
        async with connect(url, token) as client:
            single = await time_queries(client, questions)
        together: list[float] = []

        async def one(share: list[str]) -> None:
            async with connect(url, token) as client:
                together.extend(await time_queries(client, share))

        async with anyio.create_task_group() as group:
            for n in range(clients):
                group.start_soon(one, questions[n::clients])
        return single, together, process_rss_mb(process.pid)
    finally:
        process.terminate()
        await anyio.to_thread.run_sync(lambda: process.wait(timeout=60))


async def ingest_over_stdio(
    config: Path,
    texts: list[str],
    raw: Callable[[list[str]], float],
    *,
    batch: int = 64,
    rounds: int = 3,
) -> tuple[float, list[float], list[float]]:
    """Items/s through ``store_context`` (a quarter of ``texts``, one call each), then
    ``rounds`` rounds of the model alone (``raw``, in this process, while the server idles)
    and ``store_contexts`` (all of ``texts``, ``batch`` per call), alternated: on two shared
    cores one 2-second measurement of each moved 90-250 items/s from run to run, so the
    ratio compares rounds taken side by side. Each round's texts are new to the server (its
    embedding cache would answer repeats)."""
    env = {**os.environ, "RALPH_CONTEXT_CONFIG": str(config)}
    params = StdioServerParameters(command=SERVE[0], args=SERVE[1:], env=env)
    async with mcp.Client(params) as client:
        await client.call_tool("get_context_stats", {})
        singles = [f"{text} (single)" for text in texts[: max(1, len(texts) // 4)]]
        started = time.perf_counter()
        for text in singles:
            result = await client.call_tool(
                "store_context", {"content": text, "context_type": "output"}
            )
            assert not result.is_error
        single = len(singles) / (time.perf_counter() - started)
        model: list[float] = []
        batched: list[float] = []
        for round_ in range(rounds):
            fresh = [f"{text} (round {round_})" for text in texts]
            model.append(raw(fresh))
            started = time.perf_counter()
            for start in range(0, len(fresh), batch):
                items = [
                    {"content": text, "context_type": "output"}
                    for text in fresh[start : start + batch]
                ]
                result = await client.call_tool("store_contexts", {"items": items})
                assert not result.is_error
            batched.append(len(fresh) / (time.perf_counter() - started))
        return single, model, batched


def summary(latencies: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(latencies, 50), 2),
        "p99_ms": round(percentile(latencies, 99), 2),
        "mean_ms": round(float(np.mean(latencies)), 2),
    }


async def main(args: argparse.Namespace) -> None:
    corpus = load_corpus(args.data)
    embedder = load_embedder(Settings.load(None).embeddings)
    rng = np.random.default_rng(args.seed)
    random.seed(args.seed)
    base_count = min(args.bases, len(corpus.turns))
    ordered = sorted(range(base_count), key=lambda i: len(corpus.turns[i]))
    bases = np.empty((base_count, embedder.dimension), dtype=np.float32)
    for start in range(0, base_count, 32):
        chunk = ordered[start : start + 32]
        bases[chunk] = embedder.embed([corpus.turns[i] for i in chunk], 32)
    picks = rng.choice(len(corpus.questions), size=args.queries, replace=False)
    questions = [corpus.questions[int(p)] for p in picks]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ralph-mcp-bench-") as tmp:
        for size in args.sizes:
            store = Path(tmp) / f"s{size}"
            async with Engine(store_settings(store), model_loader=lambda _s: embedder) as engine:
                await load_store(engine, corpus, bases, size, rng)
                await engine.maintain()
            config = write_config(store)
            stdio = await over_stdio(config, questions)
            http = await over_http(config, questions)
            run = {"items": size, "stdio": summary(stdio), "http": summary(http)}
            runs.append(run)
            print(
                f"{size:>8} items  stdio p50 {run['stdio']['p50_ms']:6.2f} p99 "
                f"{run['stdio']['p99_ms']:6.2f} ms   http p50 {run['http']['p50_ms']:6.2f} "
                f"p99 {run['http']['p99_ms']:6.2f} ms"
            )
    results = {
        "machine": {"cpus": os.cpu_count()},
        "queries": args.queries,
        "seed": args.seed,
        "runs": runs,
        "goals": {"stdio_p99_ms_at_100k": 40, "seed_p99_ms": 100},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "mcp_results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out / 'mcp_results.json'}")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    add_store_arguments(parser)
    return parser.parse_args(argv)


if __name__ == "__main__":
    anyio.run(main, parse())
