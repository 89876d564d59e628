"""``bench peer``: our MCP server beside mcp-server-qdrant 0.8.1, over MCP stdio, on LoCoMo.

Both servers run the very same model files (MiniLM int8 from ``ralph-context model install``;
the peer's fastembed cache is laid out to point at them, ``model_files.py``), and the run
refuses to start unless a few texts embed to the same vectors both ways. Then, for each
conversation, a fresh server of each:

- ingest: ours with ``store_contexts``, a call per session (each turn one item, its dia_id
  in metadata, the conversation as its thread and the session as its iteration) and
  ``store_iteration_result`` after each, until the lifecycle passes this queues are done,
  exactly as ``bench retrieval --over-mcp`` stores LoCoMo; the peer with ``qdrant-store``,
  a call per turn (its only write tool), the dia_id in metadata, into a collection of the
  conversation's own. Timed, then their folders' size on disk;
- questions: categories 1-4 (762 on the dev split; category 5 asks about things never
  said), each asked of both, which one first alternating from question to question, with
  each server's defaults (``get_relevant_context`` with ``query`` alone; ``qdrant-find``).
  Recall@10 is LoCoMo's evidence recall (``benchmarks/retrieval/recall.py``) over the first
  ten answers; latency is the client's round trip; CPU is each server's process tree's
  user + system time over the questions (``machine.py``), per call.

On a loaded machine CPU time turns into latency (both servers pay it alike: alternating
order), so the run records the load average before, during and after, and over the
questions the cores other processes used (the machine's busy time less the servers' and
the client's).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from numpy.typing import NDArray

from benchmarks.peer.machine import CpuSnapshot, Watch
from benchmarks.peer.model_files import VectorCheck, check_vectors, lay_out_cache, peer_model_env
from benchmarks.peer.servers import (
    Found,
    Running,
    find_ours,
    find_peer,
    peer_params,
    start,
    store_peer,
)
from benchmarks.peer.venv import PACKAGE, VERSION, PeerInstall, ensure_venv
from benchmarks.retrieval.locomo import Conversation, Question, load_conversations
from benchmarks.retrieval.over_mcp import ingest, log_tail, server_params
from benchmarks.retrieval.recall import Recall, evidence_recall, summarize
from ralph_context import Settings, __version__
from ralph_context.embeddings.local import load_embedder
from ralph_context.namespaces import disk_bytes

__all__ = ["ASKED_CATEGORIES", "K", "Side", "measure", "pick_questions", "side_results"]

# LoCoMo's categories asked: all but 5 (adversarial: the answer was never said).
ASKED_CATEGORIES = (1, 2, 3, 4)
K = 10
# Texts embedded both ways before the run: the first turns and questions of the file.
_CHECK_TEXTS = 4

Tick = Callable[[], None]
Start = Callable[[int], Tick]
Finder = Callable[[str], Awaitable[Found]]


@dataclass
class Side:
    """One server's measurements over the whole run."""

    recalls: list[Recall] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    # Whether each call was the question's first (the other server asked after it).
    first: list[bool] = field(default_factory=list)
    answer_bytes: list[int] = field(default_factory=list)
    tiers: Counter[str] = field(default_factory=Counter)
    engine_ms: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0
    ingest_seconds: float = 0.0
    ingest_calls: int = 0
    items: int = 0

    def add(self, found: Found, question: Question, *, first: bool) -> None:
        """One answer to ``question``: its recall@K, latency and the rest."""
        self.recalls.append(
            Recall(question.category, K, evidence_recall(question.evidence, found.ids[:K]))
        )
        self.latencies_ms.append(found.ms)
        self.first.append(first)
        self.answer_bytes.append(found.answer_bytes)
        if found.tier is not None:
            self.tiers[found.tier] += 1
        if found.engine_ms is not None:
            self.engine_ms.append(found.engine_ms)


@dataclass(frozen=True)
class Plan:
    """What the questions run needs: the peer, our model in its cache, the folders."""

    conversations: list[tuple[Conversation, list[Question]]]
    install: PeerInstall
    cache: Path
    work: Path


def pick_questions(
    conversations: list[Conversation], limit: int | None
) -> list[tuple[Conversation, list[Question]]]:
    """The questions asked of each conversation: those of :data:`ASKED_CATEGORIES`, and
    with ``limit`` the first ``limit`` taken in turn from each conversation (so a short run
    still asks every conversation). Conversations left without a question are dropped."""
    pools = [[q for q in c.questions if q.category in ASKED_CATEGORIES] for c in conversations]
    total = sum(map(len, pools))
    wanted = total if limit is None else min(limit, total)
    taken = [0] * len(pools)
    picked = 0
    while picked < wanted:
        for index, pool in enumerate(pools):
            if picked < wanted and taken[index] < len(pool):
                taken[index] += 1
                picked += 1
    return [
        (conversation, pool[:count])
        for conversation, pool, count in zip(conversations, pools, taken, strict=True)
        if count
    ]


def _check_texts(conversations: list[Conversation]) -> list[str]:
    first = conversations[0]
    return [t.text for t in first.turns[:_CHECK_TEXTS]] + [
        q.text for q in first.questions[:_CHECK_TEXTS]
    ]


@dataclass
class _Run:
    """The questions run: a fresh server pair per conversation, filled, then asked."""

    plan: Plan
    tick: Tick
    sides: dict[str, Side] = field(default_factory=lambda: {"ours": Side(), "peer": Side()})
    watch: Watch = field(default_factory=Watch)

    async def conversation(
        self, index: int, conversation: Conversation, questions: list[Question]
    ) -> None:
        logs = self.plan.work / "logs" / f"c{index}"
        try:
            await self._serve(logs, index, conversation, questions)
        except Exception as exc:
            # The logs go with the temporary folder: their ends go with the error.
            for name in ("ours", "peer"):
                tail = log_tail(logs / f"{name}.log")
                exc.add_note(f"{name}'s log for {conversation.sample_id} ends:\n{tail}")
            raise

    async def _serve(
        self, logs: Path, index: int, conversation: Conversation, questions: list[Question]
    ) -> None:
        plan = self.plan
        async with AsyncExitStack() as stack:
            ours_folder = plan.work / "ours" / f"c{index}"
            ours = await start(stack, "ours", server_params(ours_folder), logs)
            peer_server = peer_params(
                plan.install, plan.cache, plan.work / "peer", conversation.sample_id
            )
            peer = await start(stack, "peer", peer_server, logs)
            await self._ingest(ours, peer, conversation)
            # One untimed question each: first-call paths are not what a session pays per
            # call.
            await find_ours(ours, "warm-up: who said it")
            await find_peer(peer, "warm-up: who said it")
            finders = {"ours": partial(find_ours, ours), "peer": partial(find_peer, peer)}
            pids = {"ours": ours.pid, "peer": peer.pid}
            before = CpuSnapshot.take(pids)
            for question in questions:
                await self._ask(finders, question)
            phase = CpuSnapshot.take(pids) - before
        self.watch.phases.append(phase)
        for name, used in phase.servers.items():
            self.sides[name].cpu_seconds += used

    async def _ingest(self, ours: Running, peer: Running, conversation: Conversation) -> None:
        turns = conversation.turns
        started = time.perf_counter()
        await ingest(ours.client, conversation, threads=True)
        self.sides["ours"].ingest_seconds += time.perf_counter() - started
        self.sides["ours"].ingest_calls += 2 * len({turn.session for turn in turns}) + 1
        started = time.perf_counter()
        for turn in turns:
            await store_peer(peer, turn.text, {"dia_id": turn.dia_id, "session": turn.session})
        self.sides["peer"].ingest_seconds += time.perf_counter() - started
        self.sides["peer"].ingest_calls += len(turns)
        for side in self.sides.values():
            side.items += len(turns)

    async def _ask(self, finders: Mapping[str, Finder], question: Question) -> None:
        """Both servers, the first alternating from one question to the next."""
        asked = len(self.sides["ours"].latencies_ms)
        order = ("ours", "peer") if asked % 2 == 0 else ("peer", "ours")
        for name in order:
            found = await finders[name](question.text)
            self.sides[name].add(found, question, first=name == order[0])
        self.watch.load.append(os.getloadavg()[0])
        self.tick()


async def _ask_all(plan: Plan, progress: Start | None) -> tuple[dict[str, Side], Watch]:
    total = sum(len(questions) for _, questions in plan.conversations)
    run = _Run(plan, progress(total) if progress is not None else (lambda: None))
    for index, (conversation, questions) in enumerate(plan.conversations):
        await run.conversation(index, conversation, questions)
    return run.sides, run.watch


def _p50(latencies: NDArray[np.float64]) -> float | None:
    return round(float(np.percentile(latencies, 50)), 2) if len(latencies) else None


def side_results(side: Side, disk: int) -> dict[str, Any]:
    """One server's row of ``results.json``: recall@10 (overall and by category), latency
    percentiles, CPU ms per call, ingest and ``disk`` bytes in MB."""
    calls = len(side.latencies_ms)
    latencies = np.asarray(side.latencies_ms)
    first = np.asarray(side.first, dtype=bool)
    recall = summarize(side.recalls)
    return {
        "recall_at_10": round(recall[str(K)]["overall"], 3),
        "recall": {k: {c: round(v, 3) for c, v in row.items()} for k, row in recall.items()},
        "latency_ms": {
            "p50": round(float(np.percentile(latencies, 50)), 2),
            "p99": round(float(np.percentile(latencies, 99)), 2),
            "mean": round(float(latencies.mean()), 2),
            # The other server's work right before a call (threads still spinning, caches
            # taken) shows as the gap between these two.
            "p50_asked_first": _p50(latencies[first]),
            "p50_asked_second": _p50(latencies[~first]),
        },
        "cpu_ms_per_call": round(side.cpu_seconds * 1000 / calls, 2),
        "answer_kb_p50": round(float(np.percentile(side.answer_bytes, 50)) / 1000, 1),
        # Ours only: the tiers that answered (semantic unless degraded) and the engine's
        # own time inside the round trip.
        "tiers": dict(side.tiers),
        "engine_ms_p50": _p50(np.asarray(side.engine_ms)),
        "ingest": {
            "items": side.items,
            "calls": side.ingest_calls,
            "seconds": round(side.ingest_seconds, 1),
            "items_per_second": round(side.items / side.ingest_seconds, 1),
        },
        "disk_mb": round(disk / 1e6, 2),
    }


def measure(
    data: Path,
    *,
    questions: int | None = None,
    venv: Path,
    progress: Start | None = None,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the side-by-side (see the module's docstring) and return its results.

    Args:
        data: A LoCoMo JSON file (``locomo10.json`` or a split of it).
        questions: Ask only this many, taken in turn from each conversation.
        venv: The peer's venv: made and installed if missing, reused if present.
        progress: ``start(total) -> tick``, ticked once a question (both servers asked).
        say: Where the setup's lines go.

    Raises:
        LocomoFormatError: ``data`` is not in LoCoMo's format.
        PeerInstallError: The peer could not be installed.
        ModelFilesError: No installed model, or the peer's vectors differ from ours.
        ToolFailed: A tool answered with an error.
    """
    conversations = load_conversations(data)
    asked = pick_questions(conversations, questions)
    install = ensure_venv(venv, say)
    wall = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ralph-bench-peer-") as tmp:
        work = Path(tmp)
        # The settings our first server will read (server_params writes its config): the
        # model it loads is the one the peer is pointed at.
        server_params(work / "ours" / "c0")
        settings = Settings.load(work / "ours" / "c0" / "ralph.yaml")
        model_dir = settings.embeddings.resolved_model_path()
        cache = lay_out_cache(model_dir, work / "fastembed")
        check = check_vectors(
            install.python,
            peer_model_env(cache),
            load_embedder(settings.embeddings),
            _check_texts(conversations),
        )
        say(f"vectors: {check.texts} texts the same both ways (max diff {check.max_abs_diff:.1e})")
        plan = Plan(asked, install, cache, work)
        load_before = os.getloadavg()
        sides, watch = anyio.run(_ask_all, plan, progress)
        load_after = os.getloadavg()
        ours_disk = sum(disk_bytes(work / "ours" / f"c{i}" / "store") for i in range(len(asked)))
        peer_disk = disk_bytes(work / "peer")
    return _results(
        data,
        asked,
        install,
        check,
        model_dir,
        sides,
        (ours_disk, peer_disk),
        {
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in load_after],
            "during_questions": watch.summary(),
        },
    ) | {"wall_seconds": round(time.perf_counter() - wall, 1)}


def _results(
    data: Path,
    asked: list[tuple[Conversation, list[Question]]],
    install: PeerInstall,
    check: VectorCheck,
    model_dir: Path,
    sides: dict[str, Side],
    disk: tuple[int, int],
    machine: dict[str, Any],
) -> dict[str, Any]:
    return {
        "data": str(data),
        "questions": sum(len(qs) for _, qs in asked),
        "categories": list(ASKED_CATEGORIES),
        "conversations": [c.sample_id for c, _ in asked],
        "model": {
            "id": check.model_id,
            "files": str(model_dir),
            "vectors_checked": check.texts * 2,
            "max_abs_diff": check.max_abs_diff,
        },
        "servers": {
            "ours": {"name": f"ralph-context {__version__}"} | side_results(sides["ours"], disk[0]),
            "peer": {"name": f"{PACKAGE} {VERSION}", "venv": str(install.venv)}
            | side_results(sides["peer"], disk[1]),
        },
        "machine": {"cpus": os.cpu_count()} | machine,
        "notes": (
            "Both over MCP stdio with the official client, each its defaults: "
            "get_relevant_context(query) and qdrant-find(query). A fresh server pair per "
            "conversation; the order alternates from question to question. CPU per call: "
            "the server's process tree's user+system time over the questions / questions."
        ),
    }
