"""How much of the paraphrase set's answers a gate can still push at a given silence, held
out: the acceptance line's two clauses against each other.

For each target silence, each fold's constants are the grid point (``fit.SEMANTIC_GRID``)
that pushes the answer for the most answerable paraphrase questions among those whose mean
silence over the kinds' no-answer prompts reaches the target on the other folds; the
held-out fold is graded with them. A target no grid point reaches on a fold's training
prompts takes the most silent point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.push.asked import Asked
from benchmarks.push.fit import FOLDS, SEMANTIC_GRID, fold_of
from benchmarks.push.table import Table
from ralph_context.config.retrieval import PushGate

__all__ = ["PARAPHRASE", "TARGETS", "trade_off"]

TARGETS = (0.5, 0.6, 0.7, 0.8, 0.9)
PARAPHRASE = "paraphrase"


def trade_off(
    asked: Sequence[Asked], targets: Sequence[float] = TARGETS, folds: int = FOLDS
) -> list[dict[str, Any]]:
    """Per target silence: the held-out mean silence, the paraphrase set's recall and every
    kind's figures (empty without answerable paraphrase questions)."""
    if not any(one.kind == PARAPHRASE and one.answerable for one in asked):
        return []
    table = Table(asked)
    fold = np.array(fold_of(asked, folds), dtype=np.int64)
    item_fold = fold[table.query]
    trains = {
        k: Table([one for one, f in zip(asked, fold, strict=True) if f != k])
        for k in range(folds)
        if (fold == k).any() and (fold != k).any()
    }
    rows = []
    for target in targets:
        kept = np.zeros(len(table.query), dtype=np.bool_)
        for k, train in trains.items():
            held = item_fold == k
            kept[held] = table.keep(_best_at(train, target))[held]
        graded = table.by_kind(kept)
        silences = [f.silence for f in graded.values() if f.silence is not None]
        rows.append(
            {
                "target_silence": target,
                "silence": round(float(np.mean(silences)), 4),
                "paraphrase_recall": graded[PARAPHRASE].as_dict()["recall"],
                "kinds": {kind: f.as_dict() for kind, f in graded.items()},
            }
        )
    return rows


def _best_at(train: Table, target: float) -> PushGate:
    """The grid point pushing the most paraphrase answers at ``target`` mean silence."""
    paraphrase = train.of_kind.get(PARAPHRASE)
    graded = []
    for gate in SEMANTIC_GRID:
        keep = train.keep(gate)
        found = [f.silence for f in train.by_kind(keep).values() if f.silence is not None]
        silence = float(np.mean(found)) if found else 1.0
        recall = train.figures(keep, paraphrase).recall if paraphrase is not None else None
        graded.append((silence >= target, recall or 0.0, silence, gate))
    reached = [g for g in graded if g[0]]
    pick = max(reached, key=lambda g: (g[1], g[2])) if reached else max(graded, key=lambda g: g[2])
    return pick[3]
