"""The loop scenarios (``scenarios.py``) through the engine: recall@k and MRR per mode.

Each kind's store is filled iteration by iteration as a loop fills it (the iteration's items,
its feedback, then its result, so the lifecycle runs at its defaults), then every query is
asked in the same modes as LoCoMo: ``vector``, ``text`` and ``hybrid`` from
``Engine.candidates`` (the hot table's two halves), ``served`` from ``Engine.search`` with
default settings but no score floor or token limit (the ranking alone), and ``default``:
``Engine.search(query, max_items=k)``, every other argument at its default, as a client gets
it. Each once per k. MRR is over the top 10.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.retrieval.scenarios import KINDS, Planted, ScenarioQuery, ScenarioStore, generate
from benchmarks.settings import store_settings
from ralph_context import Engine, IterationResult, NewItem
from ralph_context.arguments import MAX_TOKENS
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context.retrieval.scoring import match_strength

__all__ = ["LOOP_KS", "evaluate_scenarios", "scenario_markdown"]

LOOP_KS = (1, 3, 5, 10)
MRR_DEPTH = 10
# Candidates per half for the vector/text/hybrid modes: far more than MRR_DEPTH.
_POOL = 50

Tick = Callable[[], None]


def score_query(query: ScenarioQuery, ids: dict[str, str], ranking: Sequence[str], k: int) -> float:
    """Share of the query's answer groups with an item in the top ``k`` of ``ranking``."""
    top = set(ranking[:k])
    groups = [{ids[key] for key in group} for group in query.answers]
    return sum(bool(group & top) for group in groups) / len(groups)


def reciprocal_rank(query: ScenarioQuery, ids: dict[str, str], ranking: Sequence[str]) -> float:
    """1/rank of the first answer item in the top ``MRR_DEPTH``, else 0."""
    answers = {ids[key] for group in query.answers for key in group}
    for rank, item_id in enumerate(ranking[:MRR_DEPTH], start=1):
        if item_id in answers:
            return 1.0 / rank
    return 0.0


async def fill(engine: Engine, store: ScenarioStore) -> dict[str, str]:
    """Store the scenario as a loop would, iteration by iteration; returns key -> item id."""
    by_iteration: dict[int, list[Planted]] = defaultdict(list)
    for item in store.items:
        by_iteration[item.iteration].append(item)
    feedback: dict[str, list[bool]] = defaultdict(list)
    for given in store.feedback:
        feedback[given.key].append(given.helpful)
    ids: dict[str, str] = {}
    for iteration in range(1, store.last_iteration + 1):
        planted = by_iteration.get(iteration, [])
        stored = await engine.store_many(
            [
                NewItem(p.content, p.content_type, source="loop", iteration=iteration)
                for p in planted
            ]
        )
        for p, kept in zip(planted, stored, strict=True):
            ids[p.key] = kept.id
            for helpful in feedback.get(p.key, ()):
                await engine.mark_useful(kept.id, helpful)
        await engine.record_iteration(
            IterationResult(iteration=iteration, success=True, summary=f"iteration {iteration}")
        )
    # The pass the last iteration queued, as a loop would have let it finish.
    await engine.run_lifecycle()
    return ids


async def evaluate_scenarios(
    *, per_kind: int, model: LocalEmbedder, workdir: Path, tick: Tick
) -> dict[str, Any]:
    """Recall@1/3/5/10 and MRR per mode, overall and per kind."""
    recalls: dict[str, dict[int, dict[str, list[float]]]] = {}
    ranks: dict[str, dict[str, list[float]]] = {}
    modes = ("default", "vector", "text", "hybrid", "served")
    for mode in modes:
        recalls[mode] = {k: defaultdict(list) for k in LOOP_KS}
        ranks[mode] = defaultdict(list)

    def loader(_: EmbeddingsSettings) -> LocalEmbedder:
        return model

    stores = generate(per_kind=per_kind)
    for store in stores:
        settings = store_settings(workdir / store.kind, skillbook={"enabled": False})
        weights = settings.scoring
        async with Engine(settings, model_loader=loader) as engine:
            ids = await fill(engine, store)
            for query in store.queries:
                found = await engine.candidates(query.text, limit=_POOL)
                pooled = sorted(
                    found.pool, key=lambda c: -match_strength(c.similarity, c.lexical, weights)
                )
                rankings = {
                    "vector": [item.id for item, _ in found.semantic],
                    "text": [item.id for item, _ in found.lexical],
                    "hybrid": [c.item.id for c in pooled],
                }
                for mode, ranking in rankings.items():
                    for k in LOOP_KS:
                        recalls[mode][k][query.kind].append(score_query(query, ids, ranking, k))
                    ranks[mode][query.kind].append(reciprocal_rank(query, ids, ranking))
                for k in LOOP_KS:
                    for mode, floor, budget in (
                        ("default", None, None),
                        ("served", 0.0, MAX_TOKENS),
                    ):
                        result = await engine.search(
                            query.text, max_items=k, min_score=floor, max_tokens=budget
                        )
                        got = [r.item.id for r in result.items]
                        recalls[mode][k][query.kind].append(score_query(query, ids, got, k))
                        if k == MRR_DEPTH:
                            ranks[mode][query.kind].append(reciprocal_rank(query, ids, got))
                tick()
    return {
        "queries": sum(len(s.queries) for s in stores),
        "per_kind": per_kind,
        "kinds": list(KINDS),
        "modes": {
            mode: {
                "recall": {str(k): _summary(recalls[mode][k]) for k in LOOP_KS},
                "mrr": _summary(ranks[mode]),
            }
            for mode in modes
        },
    }


def _summary(by_kind: dict[str, list[float]]) -> dict[str, float]:
    everything = [value for values in by_kind.values() for value in values]
    summary = {"overall": round(float(np.mean(everything)), 4) if everything else 0.0}
    summary |= {kind: round(float(np.mean(values)), 4) for kind, values in by_kind.items()}
    return summary


def scenario_markdown(results: dict[str, Any]) -> str:
    """Overall recall@k and MRR per mode, then MRR per kind."""
    lines = [
        f"Loop scenarios, {results['queries']} queries ({results['per_kind']} per kind).",
        "",
        "| mode | " + " | ".join(f"@{k}" for k in LOOP_KS) + " | MRR |",
        "| --- |" + " --- |" * (len(LOOP_KS) + 1),
    ]
    for mode, row in results["modes"].items():
        cells = [f"{row['recall'][str(k)]['overall']:.3f}" for k in LOOP_KS]
        lines.append(f"| {mode} | {' | '.join(cells)} | {row['mrr']['overall']:.3f} |")
    lines += [
        "",
        "MRR by kind:",
        "",
        "| mode | " + " | ".join(results["kinds"]) + " |",
        "| --- |" + " --- |" * len(results["kinds"]),
    ]
    for mode, row in results["modes"].items():
        cells = [f"{row['mrr'].get(kind, 0.0):.3f}" for kind in results["kinds"]]
        lines.append(f"| {mode} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"
