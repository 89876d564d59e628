"""``ralph-context bench replicas``: one memory on object storage, shared by replicas.

In one run, beside the same store on local disk:

- ``search``: ``Engine.search`` p50/p99 on a store of ``--items`` (LoCoMo turns, the rest
  bulk-loaded as in ``bench latency``), on local disk, then on object storage; right after
  opening (*cold*: indexes and rows still remote) and again (*warm*: caches filled);
- ``writes``: ``store_context`` through 1, 2 and 4 replicas (``serve --transport http``
  processes over one store), two clients each: items/s in all, and what a reader then finds:
  acknowledged items lost, contents stored twice;
- ``visibility``: a write acknowledged by one replica until a search on another returns it.

Without ``--store``, the object store is a local S3 endpoint the run starts (moto's server,
on the same two cores, far slower per request than S3; the README says what that means).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp
import numpy as np
import yaml

from benchmarks.latency.mcp_latency import start_http
from benchmarks.latency.run import load_corpus, load_store
from benchmarks.replicas.endpoint import Endpoint, capacity, upload
from benchmarks.serving import owner_token_of
from benchmarks.settings import store_settings
from ralph_context import Engine, Settings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.models import ContextItem
from ralph_context.object_location import ObjectLocation
from ralph_context.server.connect import connect

__all__ = ["markdown", "measure", "write_outputs"]

Tick = Callable[[], None]
# Untimed writes each client makes first (see writes_phase).
WARM_UP = 3
GOALS = {
    "warm_search_p99_vs_local": "<= 2",
    "lost": 0,
    "duplicated": 0,
    "writes_4_vs_1": ">= 2",
    "visibility_p99_s": "<= 2",
}


def stats(values: Sequence[float]) -> dict[str, float]:
    data = np.asarray(values, dtype=float)
    return {
        "n": int(data.size),
        "p50_ms": round(float(np.percentile(data, 50)), 1),
        "p95_ms": round(float(np.percentile(data, 95)), 1),
        "p99_ms": round(float(np.percentile(data, 99)), 1),
    }


def on(location: ObjectLocation, **storage: object) -> dict[str, object]:
    """The ``storage`` section of a replica of ``location``."""
    return {"path": location.uri, "options": location.lance_options, **storage}


async def timed_searches(engine: Engine, questions: Sequence[str]) -> list[float]:
    latencies = []
    for question in questions:
        started = time.perf_counter()
        await engine.search(question)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


async def search_phase(
    size: int, data: Path, embedder: LocalEmbedder, work: Path, remote: ObjectLocation, q: int
) -> dict[str, Any]:
    corpus = load_corpus(data)
    rng = np.random.default_rng(size)
    base_count = min(2760, len(corpus.turns))
    bases = embedder.embed(corpus.turns[:base_count], 32)
    folder = work / "local"
    settings = store_settings(folder, lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=lambda _s: embedder) as engine:
        await load_store(engine, corpus, bases, size, rng)
        await engine.maintain()
        await engine.maintain(reclaim=True)
    picks = rng.choice(len(corpus.questions), size=min(q, len(corpus.questions)), replace=False)
    questions = [corpus.questions[int(p)] for p in picks]
    local = await two_passes(settings, embedder, questions)
    started, files = time.perf_counter(), await anyio.to_thread.run_sync(upload, folder, remote)
    uploaded_s = time.perf_counter() - started
    shared = Settings.load(None).with_overrides(storage=on(remote), lifecycle={"auto_run": False})
    remote_passes = await two_passes(shared, embedder, questions)
    return {
        "items": size,
        "files": files,
        "upload_s": round(uploaded_s, 1),
        "local_first": stats(local[0]),
        "local_again": stats(local[1]),
        "object_first": stats(remote_passes[0]),
        "object_again": stats(remote_passes[1]),
        "warm_p99_vs_local": round(
            stats(remote_passes[1])["p99_ms"] / stats(local[1])["p99_ms"], 2
        ),
    }


async def two_passes(
    settings: Settings, embedder: LocalEmbedder, questions: Sequence[str]
) -> tuple[list[float], list[float]]:
    """Search latencies of the questions right after the store opens (cold: on object
    storage, indexes and rows still remote), then of the same questions again (warm: a
    loop's queries come back to the same items; its query vectors are cached either way)."""
    async with Engine(settings, model_loader=lambda _s: embedder) as engine:
        await engine.search("warm-up: open the tables")
        first = await timed_searches(engine, questions)
        again = await timed_searches(engine, questions)
    return first, again


async def stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        await anyio.to_thread.run_sync(partial(process.wait, timeout=60))


def replica_config(folder: Path, location: ObjectLocation) -> Path:
    section = {
        "storage": on(location, refresh_seconds=0.5),
        "lifecycle": {"auto_run": False},
    }
    config = folder / f"{location.name}.yaml"
    config.write_text(yaml.safe_dump({"learning": {"mcp_context": section}}), encoding="utf-8")
    return config


async def writes_phase(
    replicas: int, per_client: int, work: Path, endpoint: Endpoint, embedder: LocalEmbedder
) -> dict[str, Any]:
    """``replicas`` servers, two clients each writing ``per_client`` distinct items, timed
    from when every client has made its :data:`WARM_UP` writes (a replica's first writes
    open its tables and sessions: with 25 writes a client they were a third of the time)."""
    config = replica_config(work, endpoint.location)
    servers = [await anyio.to_thread.run_sync(start_http, config) for _ in range(replicas)]
    acknowledged: dict[str, str] = {}
    errors: list[str] = []
    latencies: list[float] = []
    warm = anyio.Event()
    waiting = [2 * replicas]

    async def write(session: mcp.Client, text: str, key: str) -> None:
        result = await session.call_tool(
            "store_context", {"content": text, "context_type": "output", "idempotency_key": key}
        )
        if result.is_error:
            errors.append(str(result.content[0]))
            return
        assert result.structured_content is not None
        acknowledged[str(result.structured_content["id"])] = text

    async def client(url: str, name: str) -> None:
        # The replicas share the project's owner token.
        async with connect(url, owner_token_of(config)) as session:
            for n in range(WARM_UP):
                await write(session, f"{name} warmed up {n}: the build cache", f"{name}-w{n}")
            waiting[0] -= 1
            if not waiting[0]:
                warm.set()
            await warm.wait()
            for n in range(per_client):
                text = f"{name} wrote note {n}: the deploy waits for the schema migration"
                started = time.perf_counter()
                await write(session, text, f"{name}-{n}")
                latencies.append((time.perf_counter() - started) * 1000)

    try:
        async with anyio.create_task_group() as group:
            for r, (_, url) in enumerate(servers):
                for c in range(2):
                    group.start_soon(client, url, f"replica{r}-client{c}")
            await warm.wait()
            requests_before, cpu_before = endpoint.requests(), endpoint.cpu_seconds()
            started = time.perf_counter()
        elapsed = time.perf_counter() - started
        requests_after, cpu_after = endpoint.requests(), endpoint.cpu_seconds()
    finally:
        await stop([process for process, _ in servers])
    reader = Settings.load(None).with_overrides(
        storage=on(endpoint.location), lifecycle={"auto_run": False}
    )
    total = 2 * (per_client + WARM_UP) * replicas
    found: list[ContextItem] = []
    async with Engine(reader, model_loader=lambda _s: embedder) as engine:
        while True:  # every item, a page at a time (a page holds at most 500)
            page = await engine.browse(offset=len(found), limit=500)
            found += page.items
            if not page.items or len(found) >= page.total:
                break
    stored = Counter(item.content for item in found)
    ids = {item.id for item in found}
    timed = 2 * per_client * replicas
    made = commits = item_commits = refused = item_refused = busy = cpu_ms = None
    if requests_before is not None and requests_after is not None:
        during = requests_after - requests_before
        made = round(during.total / timed, 1)
        commits = round(during.commits / timed, 2)
        item_commits = round(during.item_commits / timed, 2)
        refused = round(during.refused_commits / timed, 2)
        item_refused = round(during.item_refused / timed, 2)
    if cpu_before is not None and cpu_after is not None:
        busy = round((cpu_after - cpu_before) / elapsed, 2)
        cpu_ms = round((cpu_after - cpu_before) * 1000 / timed, 1)
    return {
        "replicas": replicas,
        "writes": total,
        "timed": timed,
        "acknowledged": len(acknowledged),
        # What the reader found in all: a loss with ``found`` 0 is a read that saw nothing.
        "found": len(found),
        "errors": len(errors),
        # What the refused writes said (a timeout under load, a conflict given up on).
        "error_samples": sorted(set(errors))[:5],
        "items_per_s": round(timed / elapsed, 1),
        "write_ms": stats(latencies),
        "requests_per_write": made,
        "commits_per_write": commits,
        "item_commits_per_write": item_commits,
        "refused_commits_per_write": refused,
        "item_refused_commits_per_write": item_refused,
        "endpoint_cpu_ms_per_write": cpu_ms,
        "endpoint_busy_cores": busy,
        "lost": sum(1 for i in acknowledged if i not in ids),
        "duplicated": sum(n - 1 for n in stored.values() if n > 1),
    }


async def visibility_phase(writes: int, work: Path, location: ObjectLocation) -> dict[str, Any]:
    """Seconds from a write's acknowledgement on one replica until a search on another
    returns it (searches back to back)."""
    config = replica_config(work, location)
    (a, url_a), (b, url_b) = [await anyio.to_thread.run_sync(start_http, config) for _ in "ab"]
    delays: list[float] = []
    try:
        token = owner_token_of(config)
        async with connect(url_a, token) as writer, connect(url_b, token) as reader:
            for n in range(writes):
                text = f"visibility probe {n}: the staging cluster is drained on fridays"
                stored = await writer.call_tool(
                    "store_context", {"content": text, "context_type": "output"}
                )
                assert stored.structured_content is not None
                item_id = stored.structured_content["id"]
                acknowledged = time.perf_counter()
                while time.perf_counter() - acknowledged < 30:
                    found = await reader.call_tool("get_relevant_context", {"query": text})
                    assert found.structured_content is not None
                    items = found.structured_content["items"]
                    if item_id in {entry["item"]["id"] for entry in items}:
                        break
                delays.append((time.perf_counter() - acknowledged) * 1000)
    finally:
        await stop([a, b])
    measured = stats(delays)
    return {"writes": writes, "refresh_seconds": 0.5, **measured}


async def measure(
    data: Path,
    *,
    endpoint: Endpoint,
    items: int,
    queries: int,
    per_client: int,
    visibility_writes: int,
    progress: Callable[[int], Tick],
) -> dict[str, Any]:
    embedder = load_embedder(Settings.load(None).embeddings)
    remote = endpoint.location
    tick = progress(6)
    with tempfile.TemporaryDirectory(prefix="ralph-replicas-") as tmp:
        work = Path(tmp)
        search = await search_phase(items, data, embedder, work, remote / "search", queries)
        tick()
        writes = []
        for count in (1, 2, 4):
            target = endpoint.at(f"writes-{count}")
            writes.append(await writes_phase(count, per_client, work, target, embedder))
            tick()
        visibility = await visibility_phase(visibility_writes, work, remote / "visibility")
        tick()
        served = {
            str(clients): round(await anyio.to_thread.run_sync(capacity, remote, clients), 1)
            for clients in (1, 8)
        }
        tick()
    one = writes[0]["items_per_s"] or 1.0
    return {
        "machine": {"cpus": os.cpu_count(), "load_after": [round(x, 2) for x in os.getloadavg()]},
        "object_store": str(remote),
        "search": search,
        "writes": writes,
        "visibility": visibility,
        "endpoint_requests_per_s": served,
        "summary": {
            "warm_search_p99_vs_local": search["warm_p99_vs_local"],
            "lost": sum(w["lost"] for w in writes),
            "duplicated": sum(w["duplicated"] for w in writes),
            "writes_4_vs_1": round(writes[-1]["items_per_s"] / one, 2),
            "visibility_p99_s": round(visibility["p99_ms"] / 1000, 2),
        },
        "goals": GOALS,
    }


def markdown(results: dict[str, Any]) -> str:
    s = results["search"]
    lines = [
        f"# Replicas on object storage ({results['object_store']})",
        "",
        f"Search at {s['items']:,} items, ms (`Engine.search`):",
        "",
        "| store | p50 | p95 | p99 |",
        "|---|---:|---:|---:|",
    ]
    rows = (
        ("local disk, first", "local_first"),
        ("local disk, again", "local_again"),
        ("object storage, first (cold)", "object_first"),
        ("object storage, again (warm)", "object_again"),
    )
    for name, key in rows:
        lines.append(f"| {name} | {s[key]['p50_ms']} | {s[key]['p95_ms']} | {s[key]['p99_ms']} |")
    lines += [
        "",
        "| replicas | writes (timed) | items/s | write p50 / p99 ms | requests a write | "
        "commits a write (items table) | refused commits a write (items table) | "
        "store CPU ms a write | store busy, cores | errors | lost | duplicated |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["writes"]:
        lines.append(
            f"| {r['replicas']} | {r['writes']} ({r['timed']}) | {r['items_per_s']} | "
            f"{r['write_ms']['p50_ms']} / {r['write_ms']['p99_ms']} | "
            f"{_known(r['requests_per_write'])} | "
            f"{_known(r['commits_per_write'])} ({_known(r['item_commits_per_write'])}) | "
            f"{_known(r['refused_commits_per_write'])} "
            f"({_known(r.get('item_refused_commits_per_write'))}) | "
            f"{_known(r['endpoint_cpu_ms_per_write'])} | "
            f"{_known(r['endpoint_busy_cores'])} | {r['errors']} | {r['lost']} | "
            f"{r['duplicated']} |"
        )
    served = results["endpoint_requests_per_s"]
    lines += [
        "",
        f"The object store answered {served['1']} requests/s to 1 client and "
        f"{served['8']} to 8 (small writes, reads and listings).",
    ]
    cpu_ms = results["writes"][0]["endpoint_cpu_ms_per_write"]
    if cpu_ms:
        lines.append(
            f"The store's server spent {cpu_ms} ms of CPU a write with one replica writing; "
            f"a process that cannot use more than one core (moto's) then takes at most "
            f"~{round(1000 / cpu_ms, 1)} writes/s, however many replicas write."
        )
    v = results["visibility"]
    lines += [
        "",
        f"Visibility between replicas (refresh {v['refresh_seconds']} s, {v['writes']} writes): "
        f"p50 {v['p50_ms']} ms, p99 {v['p99_ms']} ms.",
        "",
        "| summary | value | goal |",
        "|---|---:|---|",
    ]
    for key, value in results["summary"].items():
        lines.append(f"| {key} | {value} | {GOALS[key]} |")
    lines.append(f"\nLoad after the run: {results['machine']['load_after']}.")
    return "\n".join(lines) + "\n"


def _known(value: object) -> str:
    return "—" if value is None else str(value)


def write_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    data, text = out / "results.json", out / "results.md"
    data.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    text.write_text(markdown(results), encoding="utf-8")
    return [data, text]
