"""LoCoMo evidence recall as an MCP client gets it: stored and asked over stdio.

``run.py`` measures the engine through the Python API. This module asks the same questions
of the real server process (``ralph-context serve``, stdio, default settings, one fresh
store per conversation), the way an agent's MCP client would:

- each session's turns with ``store_contexts`` (one call per session), in order, with
  ``thread`` = the conversation's id and ``iteration`` = the session's number, each turn's
  ``dia_id`` in its metadata; then ``store_iteration_result`` for the session, which queues
  a lifecycle pass, as ``run.py``'s ``ingest`` does;
- a dry ``summarize_old_context`` once every session is in: it queues behind the passes
  the ingest queued and changes nothing, so the questions find the store as ``run.py``
  leaves it (its last pass finished);
- each question with ``get_relevant_context`` given only ``query`` and ``max_items=k``: the
  defaults for the rest (``retrieval.min_relevance_score``, ``retrieval.max_context_tokens``)
  are what a client gets, so recall at the larger k is capped by the token budget. One call
  per k; latency is the client's, stdio and JSON included.

``--no-threads`` stores the turns with neither ``thread`` nor ``iteration`` (what the tools
took before they had them): every turn stands alone, in the latest recorded iteration.

Usage: ``python -m benchmarks.retrieval.over_mcp --data ../shared/datasets/locomo/locomo_dev.json
[--conversations N] [--questions N] [--no-threads] [--out results.json]``.

The client imports neither the engine nor LanceDB: the server owns the store, the model and
the memory they take.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp
import numpy as np
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

from benchmarks.retrieval.locomo import (
    CATEGORIES,
    Conversation,
    Question,
    Turn,
    load_conversations,
)
from benchmarks.retrieval.recall import Recall, evidence_recall, summarize

__all__ = ["KS", "MODE", "MODE_NO_THREADS", "evaluate_over_mcp", "main", "server_params"]

MODE = "default_mcp"
MODE_NO_THREADS = "default_mcp_no_threads"
# run.py's k's.
KS = (5, 10, 25, 50)
# store_contexts takes at most this many entries a call (server.tools.MAX_BATCH); a
# LoCoMo session has 10-50 turns.
BATCH = 1_000
# Any one call, the first (the server loads the model) included; a loaded 2-core machine
# took over 60 s to start a server.
CALL_TIMEOUT = 300.0
# Variables that would make the server under test differ from a default one.
_FOREIGN = ("LMSTUDIO_SERVERS", "OLLAMA_HOST", "TOGETHER_API_KEY", "HF_TOKEN")
# Default settings but the skillbook file (not looked for), as run.py's stores, and the
# curation pack, whose dry summarize_old_context waits for the lifecycle's passes.
_CONFIG = (
    "learning:\n  mcp_context:\n    storage:\n      path: store\n"
    "    skillbook:\n      enabled: false\n"
    "    packs: [curation]\n"
)


class ToolFailed(RuntimeError):
    """A tool answered with an error: the benchmark stops rather than count it as a miss."""


@dataclass
class _Run:
    items: int = 0
    ingest_seconds: float = 0.0
    recalls: list[Recall] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)


def server_params(folder: Path) -> StdioServerParameters:
    """``ralph-context serve`` over stdio on a fresh store in ``folder`` (default settings,
    no skillbook file)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "ralph.yaml"
    config.write_text(_CONFIG, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key not in _FOREIGN}
    env["RALPH_CONTEXT_CONFIG"] = str(config)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ralph_context", "serve"], env=env, cwd=str(folder)
    )


async def _call(client: mcp.Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(CALL_TIMEOUT):
        answer = await client.call_tool(tool, arguments)
    if answer.is_error or answer.structured_content is None:
        text = " ".join(c.text for c in answer.content if isinstance(c, TextContent))
        raise ToolFailed(f"{tool}: {text[:500]}")
    return dict(answer.structured_content)


def _entries(turns: Sequence[Turn], thread: str | None) -> list[dict[str, Any]]:
    entries = []
    for turn in turns:
        entry: dict[str, Any] = {
            "content": turn.text,
            "context_type": "iteration",
            "metadata": {"dia_id": turn.dia_id, "session": turn.session},
        }
        if thread is not None:
            entry |= {"thread": thread, "iteration": turn.session}
        entries.append(entry)
    return entries


async def ingest(client: mcp.Client, conversation: Conversation, *, threads: bool) -> None:
    sessions: dict[int, list[Turn]] = defaultdict(list)
    for turn in conversation.turns:
        sessions[turn.session].append(turn)
    thread = conversation.sample_id if threads else None
    for session, turns in sorted(sessions.items()):
        # One call per session (BATCH is far above a session's turns): consecutive calls
        # would also keep the turns adjacent, nothing else writes this store.
        for start in range(0, len(turns), BATCH):
            chunk = _entries(turns[start : start + BATCH], thread)
            await _call(client, "store_contexts", {"items": chunk})
        await _call(
            client,
            "store_iteration_result",
            {"iteration": session, "success": True, "summary": f"session {session}"},
        )
    await _call(client, "summarize_old_context", {"dry_run": True})


async def _conversation(
    conversation: Conversation, folder: Path, *, questions: int | None, threads: bool
) -> _Run:
    run = _Run(items=len(conversation.turns))
    params = server_params(folder)
    log_path = folder / "server.log"
    # The server's log (an audit line per write) to a file, not through our stderr.
    with log_path.open("w", encoding="utf-8") as log:
        try:
            transport = stdio_client(params, errlog=log)
            async with mcp.Client(transport, read_timeout_seconds=CALL_TIMEOUT) as client:
                started = time.perf_counter()
                await ingest(client, conversation, threads=threads)
                run.ingest_seconds = time.perf_counter() - started
                for question in conversation.questions[:questions]:
                    for k in KS:
                        await _ask(client, question, k, run)
        except Exception as exc:
            exc.add_note(f"{conversation.sample_id}'s server log ends:\n{log_tail(log_path)}")
            raise
    return run


async def _ask(client: mcp.Client, question: Question, k: int, run: _Run) -> None:
    started = time.perf_counter()
    answer = await _call(client, "get_relevant_context", {"query": question.text, "max_items": k})
    run.latencies_ms.append((time.perf_counter() - started) * 1000)
    retrieved = [str(hit["item"]["metadata"].get("dia_id")) for hit in answer["items"]]
    run.recalls.append(
        Recall(question.category, k, evidence_recall(question.evidence, retrieved[:k]))
    )


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(unreadable: {exc})"


async def evaluate_over_mcp(
    data: Path,
    *,
    conversations: int | None = None,
    questions: int | None = None,
    workdir: Path | None = None,
    threads: bool = True,
) -> dict[str, Any]:
    """Recall@k of LoCoMo's questions asked over MCP, each conversation in a server and
    store of its own (see the module's docstring).

    Args:
        data: A LoCoMo JSON file (``locomo10.json`` or a split of it).
        conversations: The first this many conversations; ``None``: all.
        questions: The first this many questions of each; ``None``: all.
        workdir: Where the temporary stores go; ``None``: the system's temporary folder.
        threads: Store each session's turns in the conversation's thread, with the
            session's number as their iteration; ``False``: with neither.

    Returns:
        ``{"modes": {"default_mcp": {"recall": ..., "latency_ms": {"p50", "p99"}}}, "ingest":
        {"items", "seconds", "items_per_second"}, ...}``; the mode is
        ``default_mcp_no_threads`` when ``threads`` is False.

    Raises:
        LocomoFormatError: ``data`` is not in LoCoMo's format.
        ToolFailed: A tool answered with an error.
        TimeoutError: A call took longer than :data:`CALL_TIMEOUT`.
    """
    loaded = load_conversations(data)[:conversations]
    runs = []
    with tempfile.TemporaryDirectory(prefix="ralph-locomo-mcp-", dir=workdir) as tmp:
        for index, conversation in enumerate(loaded):
            runs.append(
                await _conversation(
                    conversation, Path(tmp) / f"c{index}", questions=questions, threads=threads
                )
            )
    latencies = [ms for r in runs for ms in r.latencies_ms]
    items = sum(r.items for r in runs)
    seconds = sum(r.ingest_seconds for r in runs)
    return {
        "modes": {
            MODE if threads else MODE_NO_THREADS: {
                "recall": summarize(x for r in runs for x in r.recalls),
                "latency_ms": {
                    "p50": round(float(np.percentile(latencies, 50)), 2),
                    "p99": round(float(np.percentile(latencies, 99)), 2),
                },
            }
        },
        "threads": threads,
        "questions": sum(len(c.questions[:questions]) for c in loaded),
        "conversations": [c.sample_id for c in loaded],
        "ingest": {
            "items": items,
            "seconds": round(seconds, 1),
            "items_per_second": round(items / seconds, 1) if seconds else None,
        },
        "data": str(data),
        "notes": (
            "get_relevant_context with query and max_items only, one call per k: the "
            "default min_score and token budget apply; latency is the client's."
        ),
    }


def report(results: dict[str, Any]) -> str:
    """Overall recall@k, recall@10 by category, latency and ingest, as lines to print."""
    ((mode, row),) = results["modes"].items()
    recall = row["recall"]
    lines = [
        f"{mode}: LoCoMo evidence recall over MCP stdio, {results['questions']} questions "
        f"({', '.join(results['conversations'])})",
        *(f"recall@{k}: {recall[str(k)]['overall']:.3f}" for k in KS),
        "recall@10 by category: "
        + ", ".join(
            f"{name} {recall['10'][str(c)]:.3f}"
            for c, name in CATEGORIES.items()
            if str(c) in recall["10"]
        ),
        f"latency ms: p50 {row['latency_ms']['p50']}, p99 {row['latency_ms']['p99']}",
        f"ingest: {results['ingest']['items']} turns in {results['ingest']['seconds']} s",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.retrieval.over_mcp",
        description="LoCoMo evidence recall as an MCP client gets it: stored and asked over "
        "stdio, one server and store per conversation.",
    )
    parser.add_argument("--data", type=Path, required=True, help="A LoCoMo JSON file.")
    parser.add_argument("--conversations", type=int, default=None, metavar="N")
    parser.add_argument("--questions", type=int, default=None, metavar="N")
    parser.add_argument(
        "--no-threads",
        action="store_true",
        help="Store the turns without thread and iteration (the tools before they had them).",
    )
    parser.add_argument("--workdir", type=Path, default=None, help="Where the stores go.")
    parser.add_argument("--out", type=Path, default=None, help="Also write the results here.")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = anyio.run(
        lambda: evaluate_over_mcp(
            args.data,
            conversations=args.conversations,
            questions=args.questions,
            workdir=args.workdir,
            threads=not args.no_threads,
        )
    )
    results["wall_seconds"] = round(time.perf_counter() - started, 1)
    print(report(results))
    print(f"wall: {results['wall_seconds']} s")
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
