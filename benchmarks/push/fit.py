"""Fit the push gate's constants by cross-validation and grade them on held-out folds.

The gate (``ralph_context.retrieval.gate``) keeps an item when ``cosine + w · lexical >=
min_evidence`` (``w`` = ``lexical_weight``, fixed at :data:`LEXICAL_WEIGHT`; fitted too in
the report's second table), or on the text tier when ``lexical >= min_lexical``. Every grid
point is graded on what the prompt hook's search served
(``asked.py``), per kind of data (``table.Figures``):

- recall: the share of prompts a note answers whose answer is pushed;
- silence: the share of prompts nothing answers that get nothing;
- precision: the share of pushed items that answer their prompt.

The objective is the mean over the kinds of the harmonic mean of recall and silence (so
neither a kind's size nor its share of no-answer prompts weighs more, and a point that gives
up a kind's answers or its silence entirely scores 0 on it), then precision to break ties.
``min_lexical`` is fitted the same way with every item's cosine taken away, as on the text
tier (the model out); the items are still those the semantic tier served, so that row
approximates the text tier.

Cross-validation: the fold groups (a LoCoMo conversation, a LongMemEval question, a
project's store: its paraphrase and everyday prompts together) are dealt into :data:`FOLDS`
folds per kind; each fold's constants are chosen on the others and its prompts graded with
them. Held-out figures pool every fold's held-out prompts. The constants to ship
(``config.retrieval.PUSH_GATES``) are the choice made on all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.push.asked import PROMPTS, Asked
from benchmarks.push.table import Figures, Mask, Table
from ralph_context.config.retrieval import PushGate

__all__ = [
    "BARS",
    "FOLDS",
    "LEXICAL_GRID",
    "LEXICAL_WEIGHT",
    "SEMANTIC_GRID",
    "WEIGHTS",
    "HeldOut",
    "choose",
    "cross_validate",
    "fold_of",
    "grid",
    "objective",
]

FOLDS = 5
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
BARS = tuple(round(float(t), 3) for t in np.arange(0.2, 1.2001, 0.025))
# The lexical weight is not fitted: held out, every weight from 0.25 to 1 scores the same on
# the everyday prompts and LongMemEval and only moves LoCoMo along its recall-for-silence
# diagonal (0 is worse), the free fit's folds disagree (0.5-1), and BM25's evidence shrinks
# where the calibration sets do not reach (a loop's long query: the knee grows with its
# words; a young store: every word is common). The least of the weights that score best.
LEXICAL_WEIGHT = 0.25


def grid(weights: Sequence[float]) -> tuple[PushGate, ...]:
    """Every (weight, bar) point, the text tier's bar left for :func:`choose`."""
    return tuple(
        PushGate(min_evidence=bar, lexical_weight=w, min_lexical=1.0)
        for w in weights
        for bar in BARS
    )


SEMANTIC_GRID = grid(WEIGHTS)
LEXICAL_GRID: tuple[float, ...] = tuple(round(float(t), 3) for t in np.arange(0.2, 1.0001, 0.025))
# The fold groups of these kinds are the same stores (a project's).
_SHARED = {"paraphrase": "projects", "everyday": "projects"}


def objective(table: Table, keep: Mask) -> tuple[float, float]:
    """Mean :attr:`Figures.balance` over the kinds, then mean precision (ties)."""
    graded = list(table.by_kind(keep).values())
    precision = [f.precision for f in graded if f.precision is not None]
    return (
        round(float(np.mean([f.balance for f in graded])), 6),
        round(float(np.mean(precision)) if precision else 0.0, 6),
    )


def choose(table: Table, weights: Sequence[float] = (LEXICAL_WEIGHT,)) -> PushGate:
    """The grid point with the best :func:`objective` on ``table`` among ``weights`` (the
    first of equals: the smaller weight, then the lower bar), and the text tier's bar
    likewise."""
    semantic = max(grid(weights), key=lambda gate: objective(table, table.keep(gate)))
    bars = [semantic.model_copy(update={"min_lexical": bar}) for bar in LEXICAL_GRID]
    return max(bars, key=lambda gate: objective(table, table.keep(gate, text_tier=True)))


def fold_of(asked: Sequence[Asked], folds: int = FOLDS) -> list[int]:
    """Each prompt's fold: its group's, the groups of a kind dealt in turn (sorted by name)
    so every fold holds some of each kind; a project's paraphrase and everyday prompts
    share their store's fold."""
    groups: dict[str, set[str]] = defaultdict(set)
    for one in asked:
        groups[_SHARED.get(one.kind, one.kind)].add(one.group)
    dealt = {
        (family, group): i % folds
        for family, names in groups.items()
        for i, group in enumerate(sorted(names))
    }
    return [dealt[(_SHARED.get(one.kind, one.kind), one.group)] for one in asked]


@dataclass(frozen=True)
class HeldOut:
    """Cross-validation's result: each fold's choice and the held-out figures."""

    choices: tuple[PushGate, ...]
    kinds: dict[str, Figures]  # semantic tier
    categories: dict[str, dict[str, Figures]]  # kind -> category -> figures
    text: dict[str, Figures]  # the text tier (cosine taken away)


def cross_validate(
    asked: Sequence[Asked],
    folds: int = FOLDS,
    weights: Sequence[float] = (LEXICAL_WEIGHT,),
    fitted: Sequence[str] = PROMPTS,
) -> HeldOut:
    """Each fold graded with the constants chosen on the other folds' prompts of the
    ``fitted`` kinds (the lexical weight among ``weights``); the other kinds are graded
    with them too (what that gate would do to a loop)."""
    table = Table(asked)
    fold = np.array(fold_of(asked, folds), dtype=np.int64)
    item_fold = fold[table.query]
    kept = np.zeros(len(table.query), dtype=np.bool_)
    kept_text = np.zeros(len(table.query), dtype=np.bool_)
    choices = []
    for k in range(folds):
        train = [one for one, f in zip(asked, fold, strict=True) if f != k and one.kind in fitted]
        if not train or not (fold == k).any():
            continue
        gate = choose(Table(train), weights)
        choices.append(gate)
        held = item_fold == k
        kept[held] = table.keep(gate)[held]
        kept_text[held] = table.keep(gate, text_tier=True)[held]
    return HeldOut(
        tuple(choices),
        table.by_kind(kept),
        table.by_category(kept),
        table.by_kind(kept_text),
    )
