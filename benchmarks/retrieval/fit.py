"""Fit the relevance parameters on LoCoMo and the loop scenarios, with the engine's formula.

The stores are built as ``bench retrieval`` builds them (session by session, lifecycle at
its defaults; the scenarios as a loop fills them). For each query, the pool the served
ranking chooses from at k = 10 is read once through ``Engine.candidates``: vector top 40,
full-text top 20, the similarity gate, and the neighbours of what passed. Every combination
of the grid then re-ranks those pools with ``scoring.contextual_match`` and
``scoring.combine`` (the functions ``Engine.search`` scores with), and is graded by LoCoMo
recall@10 plus the scenarios' MRR (the objective; both are printed). The token budget and
the near-duplicate rule do not depend on the weights and are left out; ``type_penalty`` is
not fitted (no benchmark query asks for types), nor is the archive, which no weight moves.

Usage (≈ 6 minutes here to read the pools, seconds to grade them again with ``--reuse``)::

    python -m benchmarks.retrieval.fit --data ../shared/datasets/locomo/locomo_dev.json \\
        --out benchmarks/retrieval/fit
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from numpy.typing import NDArray

from benchmarks.retrieval.locomo import load_conversations
from benchmarks.retrieval.loop_run import fill
from benchmarks.retrieval.run import ingest
from benchmarks.retrieval.scenarios import ScenarioQuery, generate
from benchmarks.settings import store_settings
from ralph_context import ContextType, Engine, Settings
from ralph_context.config import EmbeddingsSettings, ScoringSettings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.retrieval import CANDIDATE_FACTOR, LEXICAL_FACTOR, passes_gate
from ralph_context.scoring import SKILL_DECAY_RATIO, Candidate, combine, contextual_match
from ralph_context.storage.threads import place

__all__ = ["GRID", "Pool", "grade", "main"]

K = 10
# A first, wider grid (lexical 0.3-0.5, neighbour 0.3-0.7, floor 0.7-1.0, decay 0.05-0.2,
# boost 0.1-0.5) put its best on the edges below; this one is centred there. The floor
# stops at 0.7: age may cost a match at most 30%, or an old strong match would be buried.
GRID: dict[str, tuple[float, ...]] = {
    "lexical_share": (0.4, 0.5, 0.6),
    "neighbour_share": (0.5, 0.6, 0.7, 0.8, 0.9),
    "recency_floor": (0.7, 0.75, 0.8, 0.85),
    "recency_decay": (0.02, 0.05, 0.1),
    "usefulness_boost": (0.3, 0.5, 0.7),
}
Array = NDArray[np.float64]


@dataclass(frozen=True)
class Pool:
    """One query's candidates as arrays, and what counts as found."""

    similarity: Array
    lexical: Array
    left: NDArray[np.int64]  # index of the item stored just before (same thread), or -1
    right: NDArray[np.int64]
    age: Array
    decay: Array  # 1, or SKILL_DECAY_RATIO for skills (the rate is decay · recency_decay)
    usefulness: Array
    hybrid: NDArray[np.bool_]  # came from one of the two halves (not a neighbour)
    labels: tuple[frozenset[int], ...]  # per answer group: candidate indices in it
    evidence: int  # groups to find (LoCoMo: evidence turns; 0 counts as recall 1)


def to_pool(
    candidates: list[Candidate], hybrid: int, now: int, groups: list[set[str]], evidence: int
) -> Pool:
    """Arrays from the engine's candidates (the first ``hybrid`` are the pool members)."""
    at = {where: i for i, c in enumerate(candidates) if (where := place(c.item)) is not None}

    def beside(c: Candidate, step: int) -> int:
        here = place(c.item)
        if here is None:
            return -1
        source, iteration, sequence = here
        return at.get((source, iteration, sequence + step), -1)

    return Pool(
        similarity=np.array([c.similarity for c in candidates], dtype=np.float64),
        lexical=np.array([c.lexical or 0.0 for c in candidates], dtype=np.float64),
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
        hybrid=np.arange(len(candidates)) < hybrid,
        labels=tuple(
            frozenset(i for i, c in enumerate(candidates) if c.item.id in group) for group in groups
        ),
        evidence=evidence,
    )


def served_order(pool: Pool, w: ScoringSettings) -> NDArray[np.int64]:
    """Candidate indices, best first, as ``Engine.search`` orders them under ``w``."""
    own = (1 - w.lexical_share) * np.clip(pool.similarity, 0, 1) + w.lexical_share * np.clip(
        pool.lexical, 0, 1
    )
    padded = np.append(own, 0.0)  # index -1 reads the pad: no neighbour
    neighbour = np.maximum(padded[pool.left], padded[pool.right])
    match = contextual_match(own, neighbour, w.neighbour_share)
    score = combine(match, pool.age, pool.decay * w.recency_decay, pool.usefulness, 1.0, w)
    return np.argsort(-score, kind="stable")


def hybrid_order(pool: Pool, share: float) -> NDArray[np.int64]:
    """The pool members (no neighbours) by their own match alone."""
    own = (1 - share) * np.clip(pool.similarity, 0, 1) + share * np.clip(pool.lexical, 0, 1)
    own = np.where(pool.hybrid, own, -1.0)
    order = np.argsort(-own, kind="stable")
    return order[: int(pool.hybrid.sum())]


def grade(pool: Pool, order: NDArray[np.int64], k: int) -> tuple[float, float]:
    """(share of groups found in the top ``k``, reciprocal rank of the first hit)."""
    if not pool.labels:
        return 1.0, 1.0
    top = order[:k].tolist()
    found = sum(bool(group & set(top)) for group in pool.labels) / max(pool.evidence, 1)
    hits = set().union(*pool.labels)
    first = next((rank for rank, i in enumerate(top, 1) if i in hits), None)
    return found, (1.0 / first if first else 0.0)


async def collect(data: Path, per_kind: int, model: LocalEmbedder, workdir: Path) -> dict[str, Any]:
    """Every query's pool: ``{"locomo": [...], "scenarios": {kind: [...]}}``."""

    def loader(_: EmbeddingsSettings) -> LocalEmbedder:
        return model

    vector_limit, text_limit = K * CANDIDATE_FACTOR, K * LEXICAL_FACTOR
    pools: dict[str, Any] = {"locomo": [], "scenarios": {}}
    for index, conversation in enumerate(load_conversations(data)):
        settings = store_settings(workdir / f"c{index}", skillbook={"enabled": False})
        async with Engine(settings, model_loader=loader) as engine:
            await ingest(engine, conversation)
        async with Engine(settings, model_loader=loader) as engine:
            ids = {}
            for question in conversation.questions:
                found = await engine.candidates(
                    question.text, limit=vector_limit, text_limit=text_limit
                )
                kept = [c for c in found.pool if passes_gate(c, settings.retrieval.min_similarity)]
                candidates = kept + found.neighbours
                for c in candidates:
                    ids[c.item.id] = str(c.item.metadata.get("dia_id"))
                groups = [
                    {c.item.id for c in candidates if ids[c.item.id] == dia}
                    for dia in question.evidence
                ]
                pools["locomo"].append(
                    to_pool(
                        candidates,
                        len(kept),
                        engine.current_iteration,
                        groups,
                        len(question.evidence),
                    )
                )
        print(f"fit: {conversation.sample_id} read", flush=True)
    for store in generate(per_kind=per_kind):
        settings = store_settings(workdir / store.kind, skillbook={"enabled": False})
        async with Engine(settings, model_loader=loader) as engine:
            keys = await fill(engine, store)
            pools["scenarios"][store.kind] = [
                await _scenario_pool(engine, query, keys, vector_limit, text_limit, settings)
                for query in store.queries
            ]
        print(f"fit: scenarios {store.kind} read", flush=True)
    return pools


async def _scenario_pool(
    engine: Engine,
    query: ScenarioQuery,
    keys: dict[str, str],
    vector_limit: int,
    text_limit: int,
    settings: Settings,
) -> Pool:
    found = await engine.candidates(query.text, limit=vector_limit, text_limit=text_limit)
    kept = [c for c in found.pool if passes_gate(c, settings.retrieval.min_similarity)]
    groups = [{keys[key] for key in group} for group in query.answers]
    candidates = kept + found.neighbours
    return to_pool(candidates, len(kept), engine.current_iteration, groups, len(groups))


def search_grid(pools: dict[str, Any]) -> list[dict[str, Any]]:
    """Every grid point with its LoCoMo recall@10, scenario MRR and recall@5, best first."""
    locomo: list[Pool] = pools["locomo"]
    loop: list[Pool] = [p for kind in pools["scenarios"].values() for p in kind]
    rows = []
    names = list(GRID)
    for values in itertools.product(*GRID.values()):
        w = ScoringSettings(**dict(zip(names, values, strict=True)))
        r10 = float(np.mean([grade(p, served_order(p, w), K)[0] for p in locomo]))
        graded = [grade(p, served_order(p, w), 5) for p in loop]
        mrr = float(np.mean([g[1] for g in graded])) if graded else 0.0
        r5 = float(np.mean([g[0] for g in graded])) if graded else 0.0
        rows.append(
            {
                **dict(zip(names, values, strict=True)),
                "locomo_recall10": round(r10, 4),
                "loop_mrr": round(mrr, 4),
                "loop_recall5": round(r5, 4),
                "objective": round(r10 + mrr, 4),
            }
        )
    rows.sort(key=lambda row: -row["objective"])
    return rows


def reference(pools: dict[str, Any]) -> dict[str, float]:
    """The hybrid mode (own match only) on the same pools, for comparison."""
    share = ScoringSettings().lexical_share
    locomo = [grade(p, hybrid_order(p, share), K)[0] for p in pools["locomo"]]
    loop = [
        grade(p, hybrid_order(p, share), 5) for kind in pools["scenarios"].values() for p in kind
    ]
    return {
        "locomo_recall10": round(float(np.mean(locomo)), 4),
        "loop_mrr": round(float(np.mean([g[1] for g in loop])), 4) if loop else 0.0,
        "loop_recall5": round(float(np.mean([g[0] for g in loop])), 4) if loop else 0.0,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo JSON (dev split)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/retrieval/fit"))
    parser.add_argument("--scenarios", type=int, default=48, help="queries per kind")
    parser.add_argument(
        "--reuse", action="store_true", help="grade the pools saved by an earlier run in --out"
    )
    args = parser.parse_args(argv)
    saved = args.out / "pools.pkl"
    if args.reuse:
        pools = pickle.loads(saved.read_bytes())
    else:
        model = load_embedder(Settings.load(None).embeddings)
        with tempfile.TemporaryDirectory(prefix="ralph-fit-") as tmp:
            pools = anyio.run(collect, args.data, args.scenarios, model, Path(tmp))
        args.out.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(pickle.dumps(pools))
    rows = search_grid(pools)
    defaults = ScoringSettings()
    current = next((r for r in rows if all(r[n] == getattr(defaults, n) for n in GRID)), None)
    result = {"best": rows[0], "defaults": current, "hybrid": reference(pools), "top": rows[:20]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fit.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (args.out / "grid.json").write_text(json.dumps(rows) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("best", "defaults", "hybrid")}, indent=2))


if __name__ == "__main__":
    main()
