"""Retrieval quality on LoCoMo: evidence recall@k of the engine's retrieval modes.

One store per conversation, filled as a loop fills it: each session is an iteration (its
turns stored, then its result recorded, so the lifecycle runs at its defaults after each),
every turn one item (``dia_id`` in metadata), real model, real LanceDB. Each question is
asked in five modes:

- ``default``: ``Engine.search(question, max_items=k)`` with every other argument at its
  default, the score threshold and token budget included: exactly what a client gets. It is
  the first row of every table;
- ``vector``: the vector half alone (cosine top-k);
- ``text``: the full-text half alone (LanceDB BM25 top-k);
- ``hybrid``: both halves pooled and ranked by the engine's own match alone
  (``scoring.match_strength``: cosine's and BM25's evidence joined); no gate, no neighbours,
  recency, usefulness or type;
- ``served``: ``Engine.search`` with default settings (pooling, neighbours, similarity
  gate, the relevance formula, the archive), asked once per k, but no score floor and no token
  limit: the ranking alone.

Recall is LoCoMo's own (``recall.py``), reported per category and overall next to the paper's
Table 3 retriever (DRAGON over dialogs). The loop scenarios (``scenarios.py``) run in the
same command. Writes ``results.json`` and ``results.md``, then ``recall.png`` when matplotlib
is installed (the ``[bench]`` extra), to ``--out``.

Usage: ``ralph-context bench retrieval --data ../shared/datasets/locomo/locomo_dev.json``
(LoCoMo: https://github.com/snap-research/LoCoMo, ``data/locomo10.json``, CC BY-NC 4.0).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.retrieval.locomo import CATEGORIES, Conversation, load_conversations
from benchmarks.retrieval.loop_run import evaluate_scenarios, scenario_markdown
from benchmarks.retrieval.over_mcp import evaluate_over_mcp
from benchmarks.retrieval.paraphrase_data import STORES
from benchmarks.retrieval.paraphrase_run import (
    asked_queries,
    evaluate_paraphrases,
    paraphrase_markdown,
)
from benchmarks.retrieval.recall import Recall, evidence_recall, summarize
from benchmarks.retrieval.scenarios import KINDS
from benchmarks.settings import store_settings
from ralph_context import ContextItem, ContextType, Engine, IterationResult, NewItem, Settings
from ralph_context.arguments import MAX_TOKENS
from ralph_context.config import EmbeddingsSettings, ScoringSettings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.retrieval.retriever import CANDIDATE_FACTOR
from ralph_context.retrieval.scoring import Candidate, match_strength

__all__ = [
    "DRAGON",
    "KS",
    "MODES",
    "NO_PLOT",
    "SCENARIOS_PER_KIND",
    "evaluate",
    "ingest",
    "markdown",
    "plot",
    "write_outputs",
]

MODES = ("default", "vector", "text", "hybrid", "served")
KS = (5, 10, 25, 50)
# LoCoMo paper, Table 3: DRAGON retriever over dialog turns, overall recall, all 10 conversations.
DRAGON = {"5": 0.567, "10": 0.662, "25": 0.767, "50": 0.827}

Tick = Callable[[], None]
SCENARIOS_PER_KIND = 48
NO_PLOT = (
    "recall.png not drawn: matplotlib is missing (pip install 'ralph-context[bench]'); "
    "results.json and results.md are written"
)


def strength(candidate: Candidate, weights: ScoringSettings) -> float:
    return match_strength(candidate.similarity, candidate.lexical, weights)


@dataclass
class ConversationRun:
    items: int
    ingest_seconds: float
    recalls: dict[str, list[Recall]] = field(default_factory=lambda: defaultdict(list))
    latencies_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


async def run_conversation(
    conversation: Conversation,
    store: Path,
    *,
    model: LocalEmbedder,
    questions: int | None,
    tick: Tick,
) -> ConversationRun:
    """Ingest one conversation session by session, reopen the store (the engine's clock is
    then the last session, as for a loop resuming), and ask its questions in every mode."""
    # Default settings (lifecycle included); only the skillbook file is not looked for.
    settings = store_settings(store, skillbook={"enabled": False})

    def loader(_: EmbeddingsSettings) -> LocalEmbedder:
        return model

    async with Engine(settings, model_loader=loader) as engine:
        started = time.perf_counter()
        await ingest(engine, conversation)
        run = ConversationRun(len(conversation.turns), time.perf_counter() - started)
    deepest = max(KS) * CANDIDATE_FACTOR
    weights = settings.scoring
    async with Engine(settings, model_loader=loader) as engine:
        for question in conversation.questions[:questions]:
            started = time.perf_counter()
            found = await engine.candidates(question.text, limit=deepest)
            shared_ms = (time.perf_counter() - started) * 1000
            semantic = [item for item, _ in found.semantic]
            lexical = [item for item, _ in found.lexical]
            fused = [c.item for c in sorted(found.pool, key=lambda c: -strength(c, weights))]
            for mode, ranking in (("vector", semantic), ("text", lexical), ("hybrid", fused)):
                run.latencies_ms[mode].append(shared_ms)
                for k in KS:
                    run.recalls[mode].append(
                        _recall(question.evidence, question.category, k, ranking)
                    )
            for k in KS:
                # default: what a client gets; served: no score floor and the largest
                # budget, so recall measures the ranking alone.
                for mode, floor, budget in (
                    ("default", None, None),
                    ("served", 0.0, MAX_TOKENS),
                ):
                    started = time.perf_counter()
                    result = await engine.search(
                        question.text, max_items=k, min_score=floor, max_tokens=budget
                    )
                    run.latencies_ms[mode].append((time.perf_counter() - started) * 1000)
                    ranking = [r.item for r in result.items]
                    run.recalls[mode].append(
                        _recall(question.evidence, question.category, k, ranking)
                    )
            tick()
    return run


async def ingest(engine: Engine, conversation: Conversation) -> None:
    """Store a conversation as a loop would: each session an iteration (its turns, then its
    result, which queues a lifecycle pass), then let the last pass finish and compact."""
    sessions: dict[int, list[NewItem]] = defaultdict(list)
    for turn in conversation.turns:
        sessions[turn.session].append(
            NewItem(
                turn.text,
                ContextType.ITERATION,
                metadata={"dia_id": turn.dia_id, "session": turn.session},
                source=conversation.sample_id,
                iteration=turn.session,
            )
        )
    for session, entries in sorted(sessions.items()):
        await engine.store_many(entries)
        await engine.record_iteration(
            IterationResult(iteration=session, success=True, summary=f"session {session}")
        )
    await engine.run_lifecycle()
    await engine.maintain()


def _recall(
    evidence: Sequence[str], category: int, k: int, ranking: Sequence[ContextItem]
) -> Recall:
    retrieved = [str(item.metadata.get("dia_id")) for item in ranking[:k]]
    return Recall(category, k, evidence_recall(evidence, retrieved))


async def evaluate(
    data: Path,
    *,
    conversations: int | None = None,
    questions: int | None = None,
    workdir: Path | None = None,
    progress: Callable[[int], Tick] | None = None,
    scenarios: int = SCENARIOS_PER_KIND,
    paraphrases: int | None = None,
    over_mcp: bool = False,
) -> dict[str, Any]:
    """Run the benchmark; ``conversations``/``questions`` cap the work (per file / per
    conversation) for quick runs, ``scenarios`` is the loop scenarios' queries per kind (0:
    none), ``paraphrases`` the paraphrase set's answerable and absent queries per project
    (``None``: all; 0: none). ``over_mcp`` adds the ``default_mcp`` row: the same turns
    stored and asked through a real server over MCP stdio, in threads, with defaults
    (``over_mcp.py``; minutes more). ``progress(total)`` returns a per-question tick."""
    loaded = load_conversations(data)[:conversations]
    model = load_embedder(Settings.load(None).embeddings)  # once, not per store opened
    asked = sum(len(asked_queries(s, paraphrases)) for s in STORES) if paraphrases != 0 else 0
    total = sum(len(c.questions[:questions]) for c in loaded) + scenarios * len(KINDS) + asked
    tick = progress(total) if progress is not None else (lambda: None)
    runs: list[ConversationRun] = []
    with tempfile.TemporaryDirectory(prefix="ralph-locomo-", dir=workdir) as tmp:
        loop = (
            await evaluate_scenarios(
                per_kind=scenarios, model=model, workdir=Path(tmp) / "loop", tick=tick
            )
            if scenarios
            else None
        )
        reworded = (
            await evaluate_paraphrases(
                model=model, workdir=Path(tmp) / "paraphrase", tick=tick, limit=paraphrases
            )
            if paraphrases != 0
            else None
        )
        for index, conversation in enumerate(loaded):
            runs.append(
                await run_conversation(
                    conversation,
                    Path(tmp) / f"c{index}",
                    model=model,
                    questions=questions,
                    tick=tick,
                )
            )
    items = sum(r.items for r in runs)
    ingest_seconds = sum(r.ingest_seconds for r in runs)
    modes: dict[str, Any] = {}
    for mode in MODES:
        latencies = [ms for r in runs for ms in r.latencies_ms[mode]]
        modes[mode] = {
            "recall": summarize(x for r in runs for x in r.recalls[mode]),
            "latency_ms": {
                "p50": round(float(np.percentile(latencies, 50)), 2),
                "p99": round(float(np.percentile(latencies, 99)), 2),
            },
        }
    if over_mcp:
        served_over_mcp = await evaluate_over_mcp(
            data, conversations=conversations, questions=questions, workdir=workdir
        )
        modes |= served_over_mcp["modes"]
    return {
        "model": model.model_id,
        "modes": modes,
        "scenarios": loop,
        "paraphrases": reworded,
        "questions": total - scenarios * len(KINDS) - asked,
        "conversations": [c.sample_id for c in loaded],
        "ingest": {
            "items": items,
            "seconds": round(ingest_seconds, 1),
            "items_per_second": round(items / ingest_seconds, 1) if ingest_seconds else None,
        },
        "reference": {"dragon_overall": DRAGON},
        "data": str(data),
        "notes": (
            "vector/text/hybrid share one Engine.candidates call (query embedding and both "
            f"halves, {max(KS) * CANDIDATE_FACTOR} candidates each), so their latency is the "
            "same; served is one Engine.search per k (its own k*4 vector and k*2 text pool, "
            "their neighbours, and the archive when the live matches are weak)."
        ),
    }


def markdown(results: dict[str, Any]) -> str:
    """Overall recall per mode and k next to DRAGON, then per-category recall@10."""
    lines = [
        f"LoCoMo evidence recall, {results['questions']} questions "
        f"({', '.join(results['conversations'])}); "
        f"ingest {results['ingest']['items']} turns in {results['ingest']['seconds']} s.",
        "",
        "| mode | @5 | @10 | @25 | @50 | p50 ms | p99 ms |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for mode, row in results["modes"].items():
        cells = [f"{row['recall'][str(k)]['overall']:.3f}" for k in KS]
        latency = row["latency_ms"]
        lines.append(f"| {mode} | {' | '.join(cells)} | {latency['p50']} | {latency['p99']} |")
    dragon = " | ".join(f"{DRAGON[str(k)]:.3f}" for k in KS)
    lines += [f"| DRAGON (paper, 10 conv.) | {dragon} | | |", ""]
    lines += [
        "Recall@10 by category:",
        "",
        "| mode | " + " | ".join(f"{n} ({c})" for c, n in CATEGORIES.items()) + " |",
        "| --- |" + " --- |" * len(CATEGORIES),
    ]
    for mode, row in results["modes"].items():
        at10 = row["recall"]["10"]
        cells = [f"{at10[str(c)]:.3f}" if str(c) in at10 else "-" for c in CATEGORIES]
        lines.append(f"| {mode} | {' | '.join(cells)} |")
    text = "\n".join(lines) + "\n"
    if results.get("scenarios"):
        text += "\n" + scenario_markdown(results["scenarios"])
    if results.get("paraphrases"):
        text += "\n" + paraphrase_markdown(results["paraphrases"])
    return text


def plot(results: dict[str, Any], path: Path) -> None:
    """Recall@k per mode, with the paper's DRAGON line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(7, 4.5))
    for mode, row in results["modes"].items():
        axis.plot(KS, [row["recall"][str(k)]["overall"] for k in KS], marker="o", label=mode)
    axis.plot(KS, [DRAGON[str(k)] for k in KS], "k--", marker="s", label="DRAGON (paper)")
    axis.set_xscale("log")
    axis.set_xticks(KS, [str(k) for k in KS])
    axis.set_xlabel("k (turns retrieved)")
    axis.set_ylabel("evidence recall")
    axis.set_ylim(0, 1)
    axis.set_title(f"LoCoMo evidence recall@k ({results['questions']} questions)")
    axis.grid(alpha=0.3)
    axis.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    """results.json and results.md first, then recall.png if matplotlib is installed (else a
    line on stderr naming the extra): minutes of work are never lost to a missing plotter."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(results), encoding="utf-8")
    if importlib.util.find_spec("matplotlib") is None:
        print(NO_PLOT, file=sys.stderr)
        return paths
    paths.append(out / "recall.png")
    plot(results, paths[2])
    return paths
