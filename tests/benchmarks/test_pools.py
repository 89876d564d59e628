"""The fit's pools and grader: what is fitted must be what ``Engine.search`` computes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from benchmarks.retrieval.grading import Flat
from benchmarks.retrieval.longmemeval import load_questions
from benchmarks.retrieval.paraphrase_types import Store, parse_items, parse_queries
from benchmarks.retrieval.pools import (
    Pool,
    collect_longmemeval,
    collect_paraphrases,
    open_settings,
    read_pool,
)
from ralph_context import Engine, NewItem, Settings
from ralph_context.arguments import MAX_TOKENS
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder

HERE = Path(__file__).parent
THREAD = (
    "What database does the orders service use?",
    "Postgres 16, through SQLAlchemy's async engine.",
    "And where do the migrations live?",
    "In migrations/, run by alembic upgrade head before the API starts.",
)
LOOSE = (
    "The payment client retries twice with exponential backoff on HTTP 503.",
    "Webhook signatures are HMAC-SHA256 over the raw request body.",
    "The CI pipeline runs pytest with coverage on every push to main.",
    "Use ruff format before committing Python code.",
)
QUESTIONS = (
    "which database engine do we run?",
    "where are the schema migrations kept?",
    "how are webhook requests verified?",
    "what happens when the payment provider is unavailable?",
)


async def thread_and_skills_pools(
    settings: Settings,
    loader: Callable[[EmbeddingsSettings], LocalEmbedder],
    questions: Sequence[str],
    *,
    group: Callable[[str], str],
) -> list[Pool]:
    """The pools of ``questions`` over a store holding a thread (neighbour evidence) and
    loose skills (no neighbours)."""
    async with Engine(settings, model_loader=loader) as engine:
        await engine.store_many(
            [NewItem(t, "iteration", source="chat", iteration=1) for t in THREAD]
        )
        await engine.store_many([NewItem(t, "skill") for t in LOOSE])
        items = (await engine.stats()).items
        return [
            await read_pool(
                engine, q, dataset="t", group=group(q), items=items, groups=[], evidence=0
            )
            for q in questions
        ]


# The grader's scores drive the fit; one harness backend is enough.
pytestmark = [pytest.mark.model, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def test_the_grader_ranks_a_pool_exactly_as_engine_search_does(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    def loader(_: EmbeddingsSettings) -> LocalEmbedder:
        return embedder

    settings = open_settings(tmp_path / "store")
    pools = await thread_and_skills_pools(settings, loader, QUESTIONS, group=lambda _: "g")
    served = []
    # The engine as clients get it (the gate closed again), ranking only.
    async with Engine(
        settings.with_overrides(retrieval={"min_similarity": 0.15}), model_loader=loader
    ) as engine:
        for q in QUESTIONS:
            result = await engine.search(q, max_items=10, min_score=0.0, max_tokens=MAX_TOKENS)
            served.append([(r.item.content, round(r.score, 6)) for r in result.items])
    flat = Flat(pools)
    scores = flat.scores(settings.scoring, 0.15, 0.5)
    order = flat.order(scores)
    for index, pool in enumerate(pools):
        mine = [i - flat.start[index] for i in order if flat.query[i] == index]
        kept = [i for i in mine if np.isfinite(scores[flat.start[index] + i])]
        expected = [score for _, score in served[index]]
        assert [round(float(scores[flat.start[index] + i]), 6) for i in kept] == expected
        assert len(kept) == len(served[index]) <= len(pool.similarity)
    # The other modes the fit grades per fold: cosine alone, BM25 alone, the match alone.
    modes = flat.modes(settings.scoring)
    for index, pool in enumerate(pools):
        rows = slice(flat.start[index], flat.start[index] + len(pool.similarity))
        vector = modes["vector"][rows]
        members = pool.member
        assert np.array_equal(vector[members], pool.similarity[members])
        assert np.isinf(vector[~members]).all(), "a fetched neighbour is no vector hit"
        text = modes["text"][rows]
        assert np.array_equal(np.isfinite(text), members & (pool.bm25 > 0))
        assert np.isfinite(modes["hybrid"][rows]).sum() == members.sum()


async def test_paraphrase_pools_mark_the_targets_and_leave_absent_queries_unanswered(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    store = Store(
        "tiny",
        "three items",
        parse_items(
            """
file-a file 1: src/pool.py: owns the database connection pool.
err-b error 1: `ZeroDivisionError` in stats.py line 9. Fixed by skipping empty groups.
skill-c skill 2: When a migration adds a column, give it a server default.
"""
        ),
        parse_queries("err-b: why did the averages crash?\n-: how do we deploy?"),
    )
    answered, absent = await collect_paraphrases(embedder, tmp_path, [store])
    assert (answered.dataset, answered.group, answered.evidence) == ("paraphrase", "tiny", 1)
    (target,) = answered.labels
    assert len(target) == 1 and answered.items == 3
    assert absent.evidence == 0 and absent.labels == ()
    assert len(absent.similarity) == 3  # every item is a candidate of a 3-item store


async def test_longmemeval_pools_hold_each_answer_turn_as_a_group(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    tiny = HERE / "tiny_longmemeval.json"
    pools = await collect_longmemeval(tiny, embedder, tmp_path)
    questions = load_questions(tiny)
    assert [p.group for p in pools] == [q.question_id for q in questions]
    for pool, question in zip(pools, questions, strict=True):
        if question.abstention:
            assert pool.evidence == 0 and pool.labels == ()
        else:
            assert pool.evidence == len(pool.labels) >= 1
            assert all(len(group) >= 1 for group in pool.labels)  # found among the candidates
