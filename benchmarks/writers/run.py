"""Two clients write one store at once through its server; print and save what arrived.

    python -m benchmarks.writers.run --per-writer 2000 --out benchmarks/writers/results

A store has one writing process (``ralph_context.storage.writer_lock``); clients that share
a store share its HTTP server. This starts ``ralph-context serve --transport http`` on a
fresh store, runs two client processes that each store ``--per-writer`` distinct items one
call at a time, then reads the store read-only beside the running server and counts: items
acknowledged, stored, lost (acknowledged, not stored) and duplicated (one content stored
twice). ``tests/server/test_two_writers.py`` runs the same with a few hundred writes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from benchmarks.latency.mcp_latency import start_http, write_config
from benchmarks.serving import owner_token_of
from ralph_context.config.token_file import ENV_TOKEN
from ralph_context.server.connect import connect

__all__ = ["main", "two_writers"]


async def _write(url: str, writer: str, count: int) -> list[str]:
    """Store ``count`` distinct items; the ids the server acknowledged."""
    ids: list[str] = []
    # The server's owner token, from the environment the benchmark gave this process.
    async with connect(url, os.environ.get(ENV_TOKEN)) as client:
        for n in range(count):
            answer = await client.call_tool(
                "store_context",
                {"content": f"writer {writer} item {n}: a note", "context_type": "output"},
            )
            if answer.is_error or answer.structured_content is None:
                raise RuntimeError(f"writer {writer}, item {n}: {answer.content}")
            ids.append(str(answer.structured_content["id"]))
    return ids


def two_writers(store: Path, per_writer: int) -> dict[str, Any]:
    """Run the server and two client processes on ``store``; the counts."""
    from ralph_context.storage.lance_store import LanceStore
    from ralph_context.storage.table.filters import ItemFilter

    store.mkdir(parents=True, exist_ok=True)
    config = write_config(store)
    server, url = start_http(config)
    try:
        env = {**os.environ, ENV_TOKEN: owner_token_of(config)}
        started = time.monotonic()
        clients = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.writers.run",
                    "--client",
                    url,
                    name,
                    str(per_writer),
                ],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            for name in ("a", "b")
        ]
        acknowledged: list[str] = []
        for client in clients:
            out, _ = client.communicate(timeout=3600)
            if client.returncode != 0:
                raise RuntimeError(f"a client failed (exit {client.returncode})")
            acknowledged.extend(json.loads(out))
        seconds = time.monotonic() - started
        reader = LanceStore(store, model_id=None, dimension=None, read_only=True)
        stored = reader.list_items(ItemFilter(), 10 * per_writer + 100)
    finally:
        server.kill()
        server.communicate(timeout=60)
    ids = {item.id for item in stored}
    contents = Counter(item.content for item in stored)
    return {
        "writers": 2,
        "per_writer": per_writer,
        "acknowledged": len(acknowledged),
        "stored": len(stored),
        "lost": len(set(acknowledged) - ids),
        "duplicated": sum(n - 1 for n in contents.values() if n > 1),
        "seconds": round(seconds, 1),
        "writes_per_s": round(len(acknowledged) / seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--per-writer", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--client", nargs=3, metavar=("URL", "NAME", "COUNT"), default=None)
    args = parser.parse_args(argv)
    if args.client is not None:
        url, name, count = args.client
        print(json.dumps(anyio.run(_write, url, name, int(count))))
        return 0
    with tempfile.TemporaryDirectory(prefix="ralph-writers-") as work:
        report = two_writers(Path(work) / "store", args.per_writer)
    print(json.dumps(report, indent=2))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0 if report["lost"] == 0 and report["duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
