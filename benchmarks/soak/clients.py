"""The soak benchmark's clients: ``procs`` processes, each an asyncio loop of its share of
the clients, so the client side is not one GIL. Each client calls back to back (a search,
or one call in ``write_every`` a write) and, refused with 429, waits the ``Retry-After``
the server gave before its next call, as a well-behaved client does.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from typing import Any

import anyio
import mcp

from ralph_context.config.token_file import ENV_TOKEN
from ralph_context.server.connect import connect

__all__ = ["NAMESPACES", "run_phase"]

NAMESPACES = ("alpha", "beta", "gamma")

# A refusal's message ends with the Retry-After it carries: "...; retry in 2 s".
_RETRY = re.compile(r"retry in (\d+) s")


async def _client(
    url: str, name: str, start: float, until: float, questions: list[str], write_every: int
) -> list[dict[str, Any]]:
    """Connects, waits for ``start``, then calls back to back until ``until`` (monotonic
    clock, shared by the processes of one machine); one record per call."""
    rng = random.Random(name)
    calls: list[dict[str, Any]] = []
    # The server's owner token, from the environment the benchmark gave this process.
    async with connect(url, os.environ.get(ENV_TOKEN)) as client:
        await anyio.sleep(max(0.0, start - time.monotonic()))
        n = 0
        while time.monotonic() < until:
            n += 1
            write = n % write_every == 0
            started = time.perf_counter()
            record: dict[str, Any] = {"kind": "write" if write else "search"}
            retry = None
            try:
                if write:
                    content = f"soak note {name} #{n}: {rng.choice(questions)}"
                    answer = await client.call_tool(
                        "store_context",
                        {
                            "content": content,
                            "context_type": "output",
                            "metadata": {"client": name, "n": n},
                        },
                    )
                    if not answer.is_error and answer.structured_content:
                        record["id"] = answer.structured_content["id"]
                        record["content"] = content
                else:
                    answer = await client.call_tool(
                        "get_relevant_context", {"query": rng.choice(questions)}
                    )
                    stats = (answer.structured_content or {}).get("stats") or {}
                    record["embed_ms"] = stats.get("query_embedding_time_ms")
                    record["engine_ms"] = stats.get("search_time_ms")
                record["outcome"] = "error" if answer.is_error else "ok"
                if answer.is_error:
                    record["error"] = str(answer.content)[:200]
            except mcp.MCPError as exc:
                retry = _RETRY.search(str(exc))
                record["outcome"] = "refused" if retry else "error"
                record["error"] = str(exc)[:200]
            record["ms"] = (time.perf_counter() - started) * 1000
            calls.append(record)
            if retry is not None:
                # The Retry-After the server gave (also in the refusal's message).
                record["retry_after_s"] = int(retry.group(1))
                await anyio.sleep(record["retry_after_s"])
    return calls


async def _clients(spec: dict[str, Any]) -> dict[str, Any]:
    """This process's clients' records, and the CPU seconds it spent from the start."""
    results: list[dict[str, Any]] = []
    began: list[float] = []

    async def clock() -> None:
        await anyio.sleep(max(0.0, spec["start"] - time.monotonic()))
        began.append(time.process_time())

    async def one(url: str, name: str) -> None:
        for record in await _client(
            url, name, spec["start"], spec["until"], spec["questions"], spec["write_every"]
        ):
            record["client"], record["url"] = name, url
            results.append(record)

    async with anyio.create_task_group() as group:
        group.start_soon(clock)
        for url, name in spec["clients"]:
            group.start_soon(one, url, name)
    return {"records": results, "cpu_s": time.process_time() - began[0]}


def _worker() -> None:
    spec = json.loads(sys.stdin.read())
    print(json.dumps(anyio.run(_clients, spec)))


# --- the phases ---------------------------------------------------------------------------


def run_phase(
    base: str,
    *,
    clients: int,
    seconds: float,
    procs: int,
    questions: list[str],
    write_every: int,
    label: str,
    token: str,
) -> tuple[list[dict[str, Any]], float]:
    """``clients`` clients spread over the namespaces and ``procs`` processes; their
    records, and the CPU seconds the client processes spent calling."""
    names = [(f"{base}/ns/{NAMESPACES[i % 3]}/mcp", f"{label}{i}") for i in range(clients)]
    # Every client connected before the clock starts: imports take seconds on a busy box,
    # and tens of them at a load of 19 on two cores (a client connected late runs less).
    busy = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    start_at = time.monotonic() + (8.0 + clients * 0.1) * busy
    workers = []
    for p in range(procs):
        spec = {
            "clients": names[p::procs],
            "start": start_at,
            "until": start_at + seconds,
            "questions": questions,
            "write_every": write_every,
        }
        worker = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.soak.clients"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, ENV_TOKEN: token},
        )
        assert worker.stdin is not None
        worker.stdin.write(json.dumps(spec))
        worker.stdin.close()
        workers.append(worker)
    records: list[dict[str, Any]] = []
    client_cpu = 0.0
    for worker in workers:
        assert worker.stdout is not None
        out = worker.stdout.read()
        if worker.wait(timeout=seconds + 600) != 0:
            raise RuntimeError(f"a client process failed (exit {worker.returncode})")
        answer = json.loads(out)
        records.extend(answer["records"])
        client_cpu += answer["cpu_s"]
    return records, client_cpu


if __name__ == "__main__":
    _worker()
