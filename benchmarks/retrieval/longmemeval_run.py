"""Retrieval quality on LongMemEval-S: turn and session recall of the engine's modes.

Each question has its own haystack (~50 sessions, ~500 turns), so each gets a fresh store
(``longmemeval_store.fill_store``: sessions in date order, each an iteration, a turn an
item threaded by its session), reopened to be asked. Modes, all over the same turns:

- ``default``: ``Engine.search(question, max_items=k)``, every other argument at its
  default (the relevance threshold and the 4,000-token budget included): what a client gets;
- ``served``: ``Engine.search(question, max_items=k, min_score=0, max_tokens=MAX_TOKENS)``,
  the ranking alone;
- ``vector``, ``text``, ``hybrid``: one ``Engine.candidates(question, limit=200)`` (as the
  LoCoMo bench): the vector half, the full-text half, and their pool ranked by match
  strength alone;
- ``bm25``: ``rank_bm25.BM25Okapi`` over the stored texts, split on ``" "`` as
  LongMemEval's ``flat-bm25`` does (no lowercasing, punctuation kept);
- ``cosine``: brute-force cosine with the same MiniLM, on the vectors the engine computed.

``default`` and ``served`` depend on k: they are asked once per k in (5, 10) for the turn
metrics (the k items a client asking for k gets) and once at ``max_items=50`` for the session
metrics (the first k distinct sessions of that ranking) and the official variant. The other
modes are one ranking, cut at k. The metrics are LongMemEval's (``longmemeval_metrics``); the
official session variant ranks user turns only: for the engine modes and ``cosine``, their
ranking filtered to user turns (cosine does not depend on the rest of the index); for
``bm25``, a second index of the raw user-turn contents, which is LongMemEval's own
``flat-bm25`` turn run exactly.
"""

from __future__ import annotations

import pickle
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from rank_bm25 import BM25Okapi

from benchmarks.retrieval.longmemeval import Question, Turn, load_questions
from benchmarks.retrieval.longmemeval_metrics import (
    official_evidence,
    official_session_recall,
    official_turn_id,
    recall,
    session_recall,
)
from benchmarks.retrieval.longmemeval_report import KS, METRICS, MODES, QuestionRun, summarize
from benchmarks.retrieval.longmemeval_store import (
    RecordingEmbedder,
    fill_store,
    open_engine,
    stored_text,
)
from benchmarks.retrieval.pools import Pool, longmemeval_pool
from ralph_context import ContextItem, Settings
from ralph_context.arguments import MAX_ITEMS, MAX_TOKENS
from ralph_context.embeddings.local import load_embedder
from ralph_context.retrieval.retriever import CANDIDATE_FACTOR
from ralph_context.retrieval.scoring import match_strength

__all__ = ["DEEP", "Ranked", "evaluate", "run_question", "score"]

# default/served asked this deep for the session metrics (the engine's most).
DEEP = MAX_ITEMS

Tick = Callable[[], None]


@dataclass(frozen=True)
class Ranked:
    """One mode's answer to one question, as turns, best first."""

    at_k: dict[int, list[Turn]]  # scored for the turn metrics at k
    deep: list[Turn]  # scored for the session metrics
    official: list[Turn] | None = None  # its own user-turn ranking, else deep's user turns


def score(question: Question, ranked: Ranked) -> dict[str, float | None]:
    """The metrics of one ranking; ``None`` where LongMemEval skips the question."""
    values: dict[str, float | None] = dict.fromkeys(METRICS)
    if question.abstention:
        return values
    evidence = question.evidence_turns
    if evidence:
        for k in KS:
            hit_any, hit_all = recall([t.unit for t in ranked.at_k[k]], evidence, k)
            values[f"turn_any@{k}"], values[f"turn_all@{k}"] = hit_any, hit_all
    sessions = set(question.answer_session_ids)
    values["session_any@5"] = session_recall(ranked.deep, sessions, 5)[0]
    values["session_any@10"], values["session_all@10"] = session_recall(ranked.deep, sessions, 10)
    correct = official_evidence(question)
    if correct:
        users = ranked.official
        if users is None:
            users = [t for t in ranked.deep if t.role == "user"]
        ids = [official_turn_id(t) for t in users]
        for k in KS:
            found = official_session_recall(ids, correct, k)
            values[f"official_any@{k}"] = found.any
            values[f"official_covered@{k}"] = float(found.covered)
    return values


async def run_question(
    question: Question, store: Path, model: RecordingEmbedder, pools: list[Pool] | None = None
) -> QuestionRun:
    """Fill a store with ``question``'s haystack, ask it in every mode, score each; with
    ``pools``, also read the question's candidate pool for the fit (``fit.py``) from the
    same store, so a fit needs no second fill."""
    model.documents.clear()
    filled = await fill_store(question, store, model)
    run = QuestionRun(question, len(filled.turns), filled.seconds, filled.truncated)
    weights = filled.settings.scoring
    rankings: dict[str, Ranked] = {}
    async with open_engine(filled.settings, model) as engine:

        def turns_of(items: Sequence[ContextItem]) -> list[Turn]:
            found = [filled.turns[i.id] for i in items if i.id in filled.turns]
            run.unmapped += len(items) - len(found)
            return found

        for mode, floor, budget in (("default", None, None), ("served", 0.0, MAX_TOKENS)):
            asked: dict[int, list[Turn]] = {}
            for k in (*KS, DEEP):
                started = time.perf_counter()
                result = await engine.search(
                    question.text, max_items=k, min_score=floor, max_tokens=budget
                )
                if k == max(KS):
                    run.latency_ms[mode] = (time.perf_counter() - started) * 1000
                items = [r.item for r in result.items]
                asked[k] = turns_of(items)
                if mode == "default":
                    run.returned[k] = len(items)
                    if k == max(KS):
                        run.states.update(item.state.value for item in items)
                        run.states[f"tier:{result.tier.value}"] += 1
            rankings[mode] = Ranked({k: asked[k] for k in KS}, asked[DEEP])
        started = time.perf_counter()
        found = await engine.candidates(question.text, limit=DEEP * CANDIDATE_FACTOR)
        shared_ms = (time.perf_counter() - started) * 1000
        pooled = sorted(found.pool, key=lambda c: -match_strength(c.similarity, c.lexical, weights))
        for mode, items in (
            ("vector", [item for item, _ in found.semantic]),
            ("text", [item for item, _ in found.lexical]),
            ("hybrid", [c.item for c in pooled]),
        ):
            ranking = turns_of(items)
            rankings[mode] = Ranked(dict.fromkeys(KS, ranking), ranking)
            run.latency_ms[mode] = shared_ms
    if pools is not None:
        pools.append(await longmemeval_pool(question, filled, model))
    limit = filled.settings.storage.max_content_bytes
    rankings.update(_baselines(question, limit, model, run))
    for mode in MODES:
        run.metrics[mode] = score(question, rankings[mode])
    return run


def _baselines(
    question: Question, limit: int, model: RecordingEmbedder, run: QuestionRun
) -> dict[str, Ranked]:
    """Plain BM25 and plain cosine over every turn of the haystack, as stored."""
    turns = list(question.turns)
    texts = [stored_text(turn, limit)[0] for turn in turns]
    index = BM25Okapi([text.split(" ") for text in texts])
    started = time.perf_counter()
    order = _descending(index.get_scores(question.text.split(" ")))
    run.latency_ms["bm25"] = (time.perf_counter() - started) * 1000
    bm25 = [turns[i] for i in order]
    users = [turn for turn in turns if turn.role == "user"]
    official = BM25Okapi([turn.content.split(" ") for turn in users])
    bm25_users = [users[i] for i in _descending(official.get_scores(question.text.split(" ")))]

    missing = [text for text in dict.fromkeys(texts) if text not in model.documents]
    if missing:  # only if the engine stored a turn without a vector
        model.documents.update(zip(missing, model.embed(missing, 32), strict=True))
    matrix = np.stack([model.documents[text] for text in texts])
    started = time.perf_counter()
    probe = model.embed([question.text], 1, query=True)[0]
    ranked = np.argsort(-(matrix @ probe), kind="stable")
    run.latency_ms["cosine"] = (time.perf_counter() - started) * 1000
    cosine = [turns[int(i)] for i in ranked]
    return {
        "bm25": Ranked(dict.fromkeys(KS, bm25), bm25, official=bm25_users),
        "cosine": Ranked(dict.fromkeys(KS, cosine), cosine),
    }


def _descending(scores: Any) -> list[int]:
    # LongMemEval's own order, ties included: np.argsort(scores)[::-1].
    return [int(i) for i in np.argsort(scores)[::-1]]


async def evaluate(
    data: Path,
    *,
    questions: int | None = None,
    workdir: Path | None = None,
    progress: Callable[[int], Tick] | None = None,
    pools_out: Path | None = None,
) -> dict[str, Any]:
    """Run the benchmark on the first ``questions`` questions of ``data`` (all by default).
    ``progress(total)`` returns a per-question tick. With ``pools_out``, every question's
    candidate pool is pickled there (rewritten after each question, so an interrupted run
    keeps what it read) for ``python -m benchmarks.retrieval.fit --add-pools``."""
    loaded = load_questions(data)[:questions]
    # Loaded once, not per store opened; it records the document vectors for ``cosine``.
    model = RecordingEmbedder(load_embedder(Settings.load(None).embeddings))
    tick = progress(len(loaded)) if progress is not None else (lambda: None)
    runs: list[QuestionRun] = []
    pools: list[Pool] | None = [] if pools_out is not None else None
    if pools_out is not None:
        await anyio.Path(pools_out.parent).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ralph-lme-", dir=workdir) as tmp:
        for index, question in enumerate(loaded):
            store = Path(tmp) / f"q{index}"
            runs.append(await run_question(question, store, model, pools))
            shutil.rmtree(store, ignore_errors=True)  # ~500 turns each; keep the disk small
            if pools_out is not None:
                await anyio.Path(pools_out).write_bytes(pickle.dumps(pools))
            tick()
    return summarize(runs, data=data, wall_seconds=time.perf_counter() - started)
