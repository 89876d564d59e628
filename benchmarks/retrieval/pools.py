"""Every query's candidate pool as arrays, for fitting the relevance formula offline.

A pool is what ``Engine.search`` chooses from at k = 10 (vector top 40, full-text top 20 and
the neighbours of the best threaded full-text hits), read once through ``Engine.candidates``
with the similarity gate open, so that a fit can apply any gate, any way of combining cosine
and BM25, any threshold and the token budget to the same candidates. Raw features only:
cosine, raw BM25 (0 for an item the full-text half did not return), the store's size, each
candidate's neighbours in its thread, age, usefulness and token cost.

Each dataset's stores are built as its benchmark builds them (LoCoMo and the loop scenarios
here; the paraphrase set and LongMemEval by their own runners' pool functions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from benchmarks.retrieval.locomo import load_conversations
from benchmarks.retrieval.longmemeval import Question, load_questions
from benchmarks.retrieval.longmemeval_store import FilledStore, fill_store, open_engine
from benchmarks.retrieval.loop_run import fill
from benchmarks.retrieval.paraphrase_data import STORES
from benchmarks.retrieval.paraphrase_run import fill as fill_project
from benchmarks.retrieval.paraphrase_types import Store
from benchmarks.retrieval.run import ingest
from benchmarks.retrieval.scenarios import generate
from benchmarks.settings import store_settings
from ralph_context import ContextType, Engine, Settings
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context.retrieval.retriever import CANDIDATE_FACTOR, LEXICAL_FACTOR, Candidates
from ralph_context.retrieval.scoring import SKILL_DECAY_RATIO, Candidate, item_tokens
from ralph_context.storage.table.threads import place

__all__ = [
    "K",
    "Pool",
    "collect_locomo",
    "collect_longmemeval",
    "collect_paraphrases",
    "collect_scenarios",
    "longmemeval_pool",
    "open_settings",
    "read_pool",
    "to_pool",
]

# The pool Engine.search chooses from when a client asks for 10 items.
K = 10
Array = NDArray[np.float64]


@dataclass(frozen=True)
class Pool:
    """One query's candidates as arrays, and what counts as found."""

    dataset: str  # locomo, scenarios, paraphrase, longmemeval
    group: str  # the unit folds are cut along (a conversation, a store, a question)
    similarity: Array
    bm25: Array  # raw BM25 from the full-text half, 0 where it did not return the item
    items: int  # live items in the store searched (BM25's document count)
    left: NDArray[np.int64]  # index of the item stored just before (same thread), or -1
    right: NDArray[np.int64]
    age: Array
    decay: Array  # 1, or SKILL_DECAY_RATIO for skills (the rate is decay · recency_decay)
    usefulness: Array
    tokens: NDArray[np.int64]  # what the item costs in the token budget
    member: NDArray[np.bool_]  # came from one of the two halves (not a fetched neighbour)
    labels: tuple[frozenset[int], ...]  # per answer group: candidate indices in it
    evidence: int  # groups to find (0: nothing answers the query, an abstention)
    query: str = ""  # the question asked (for features of its words)


def open_settings(store: Path) -> Settings:
    """A benchmark store's settings with the similarity gate open: the pool keeps every
    candidate and the fit applies the gate it grades."""
    return store_settings(store, skillbook={"enabled": False}, retrieval={"min_similarity": -1.0})


def to_pool(
    found: Candidates,
    *,
    dataset: str,
    group: str,
    items: int,
    now: int,
    groups: Sequence[set[str]],
    evidence: int,
    query: str = "",
) -> Pool:
    """Arrays from the engine's candidates: the pool members first, then the neighbours."""
    candidates: list[Candidate] = [*found.pool, *found.neighbours]
    raw = {item.id: score for item, score in found.lexical}
    at = {where: i for i, c in enumerate(candidates) if (where := place(c.item)) is not None}

    def beside(c: Candidate, step: int) -> int:
        here = place(c.item)
        if here is None:
            return -1
        source, iteration, sequence = here
        return at.get((source, iteration, sequence + step), -1)

    return Pool(
        dataset=dataset,
        group=group,
        similarity=np.array([c.similarity for c in candidates], dtype=np.float64),
        bm25=np.array([raw.get(c.item.id, 0.0) for c in candidates], dtype=np.float64),
        items=items,
        left=np.array([beside(c, -1) for c in candidates], dtype=np.int64),
        right=np.array([beside(c, 1) for c in candidates], dtype=np.int64),
        age=np.array([max(now - c.item.created_iteration, 0) for c in candidates], float),
        decay=np.array(
            [
                SKILL_DECAY_RATIO if c.item.content_type is ContextType.SKILL else 1.0
                for c in candidates
            ],
            dtype=np.float64,
        ),
        usefulness=np.array([c.item.usefulness_score for c in candidates], dtype=np.float64),
        tokens=np.array([item_tokens(c.item) for c in candidates], dtype=np.int64),
        member=np.arange(len(candidates)) < len(found.pool),
        labels=tuple(
            frozenset(i for i, c in enumerate(candidates) if c.item.id in ids) for ids in groups
        ),
        evidence=evidence,
        query=query,
    )


async def read_pool(
    engine: Engine,
    text: str,
    *,
    dataset: str,
    group: str,
    items: int,
    groups: Sequence[set[str]],
    evidence: int,
) -> Pool:
    """``text``'s pool at k = :data:`K` in ``engine``'s store."""
    found = await engine.candidates(text, limit=K * CANDIDATE_FACTOR, text_limit=K * LEXICAL_FACTOR)
    return to_pool(
        found,
        dataset=dataset,
        group=group,
        items=items,
        now=engine.current_iteration,
        groups=groups,
        evidence=evidence,
        query=text,
    )


async def collect_locomo(data: Path, model: LocalEmbedder, workdir: Path) -> list[Pool]:
    """Every LoCoMo question's pool; a conversation is a fold group."""
    pools: list[Pool] = []
    for index, conversation in enumerate(load_conversations(data)):
        settings = open_settings(workdir / f"c{index}")
        async with open_engine(settings, model) as engine:
            await ingest(engine, conversation)
        async with open_engine(settings, model) as engine:
            items = (await engine.stats()).items
            dia: dict[str, str] = {}
            for question in conversation.questions:
                pool = await engine.candidates(
                    question.text, limit=K * CANDIDATE_FACTOR, text_limit=K * LEXICAL_FACTOR
                )
                for c in (*pool.pool, *pool.neighbours):
                    dia[c.item.id] = str(c.item.metadata.get("dia_id"))
                groups = [{i for i, d in dia.items() if d == want} for want in question.evidence]
                pools.append(
                    to_pool(
                        pool,
                        dataset="locomo",
                        group=conversation.sample_id,
                        items=items,
                        now=engine.current_iteration,
                        groups=groups,
                        evidence=len(question.evidence),
                        query=question.text,
                    )
                )
        print(f"pools: locomo {conversation.sample_id} read", flush=True)
    return pools


async def collect_scenarios(per_kind: int, model: LocalEmbedder, workdir: Path) -> list[Pool]:
    """Every loop scenario query's pool; a kind's store is a fold group."""
    pools: list[Pool] = []
    for store in generate(per_kind=per_kind):
        settings = open_settings(workdir / store.kind)
        async with open_engine(settings, model) as engine:
            keys = await fill(engine, store)
            items = (await engine.stats()).items
            for query in store.queries:
                groups = [{keys[key] for key in group} for group in query.answers]
                pools.append(
                    await read_pool(
                        engine,
                        query.text,
                        dataset="scenarios",
                        group=store.kind,
                        items=items,
                        groups=groups,
                        evidence=len(groups),
                    )
                )
        print(f"pools: scenarios {store.kind} read", flush=True)
    return pools


async def collect_paraphrases(
    model: LocalEmbedder, workdir: Path, stores: Sequence[Store] = STORES
) -> list[Pool]:
    """Every paraphrase query's pool (absent ones with no answer); a project is a fold
    group. Any one of a query's targets answers it."""
    pools: list[Pool] = []
    for store in stores:
        settings = open_settings(workdir / store.project)
        async with open_engine(settings, model) as engine:
            keys = {key: item_id for item_id, key in (await fill_project(engine, store)).items()}
            items = (await engine.stats()).items
            for query in store.queries:
                groups = [{keys[t] for t in query.targets}] if query.targets else []
                pools.append(
                    await read_pool(
                        engine,
                        query.text,
                        dataset="paraphrase",
                        group=store.project,
                        items=items,
                        groups=groups,
                        evidence=len(groups),
                    )
                )
        print(f"pools: paraphrase {store.project} read", flush=True)
    return pools


async def collect_longmemeval(
    data: Path, model: LocalEmbedder, workdir: Path, questions: int | None = None
) -> list[Pool]:
    """Every LongMemEval question's pool in its own haystack, filled as ``bench retrieval``
    fills it; abstention questions too (nothing answers them). A question is a fold group;
    each ``has_answer`` turn is an answer group. (``bench retrieval`` on a LongMemEval file
    saves the same pools beside its results: one fill for both.)"""
    pools: list[Pool] = []
    for index, question in enumerate(load_questions(data)[:questions]):
        filled = await fill_store(question, workdir / f"q{index}", model)
        pools.append(await longmemeval_pool(question, filled, model))
        print(f"pools: longmemeval {index + 1} read", flush=True)
    return pools


async def longmemeval_pool(question: Question, filled: FilledStore, model: LocalEmbedder) -> Pool:
    """``question``'s pool in its filled haystack, the gate open."""
    groups: dict[str, set[str]] = {}
    for item_id, turn in filled.turns.items():
        if turn.has_answer and not question.abstention:
            groups.setdefault(turn.unit, set()).add(item_id)
    settings = filled.settings.with_overrides(retrieval={"min_similarity": -1.0})
    async with open_engine(settings, model) as engine:
        return await read_pool(
            engine,
            question.text,
            dataset="longmemeval",
            group=question.question_id,
            items=(await engine.stats()).items,
            groups=list(groups.values()),
            evidence=len(groups),
        )
