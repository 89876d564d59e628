"""Fit the relevance formula and the default threshold by cross-validation over every set.

The pools (``pools.py``: what ``Engine.search`` chooses from at k = 10, gate open) of every
query of LoCoMo dev, the loop scenarios, the paraphrase set and LongMemEval dev are read once.
Each grid point of the match's parameters (cosine's evidence curves, BM25's knee and weight,
the neighbours' share, the gate) re-ranks every pool with ``ralph_context.retrieval.scoring``'s own
functions (``grading.py``, tested to rank as ``Engine.search`` does), and is graded per set:
LoCoMo and LongMemEval evidence recall@10, scenario and paraphrase MRR@10. The objective is
the mean over the sets, so no set outweighs another by its size, among the points that keep
LoCoMo's recall@10 at :data:`LOCOMO_FLOOR` at least.

Cross-validation: each set's fold groups (a LoCoMo conversation, a scenario kind, a
paraphrase project, a LongMemEval question) are dealt into five folds. For each fold the
grid point and then the threshold are chosen on the other four and graded on the held-out
one; the script prints held-out scores only, then the choice made on everything (the
defaults to set in ``config/retrieval.py``).

The threshold (a score floor and a floor relative to the query's best) is chosen as the one
that returns the fewest items that answer nothing, among those that keep, on every set, the
answer a query's own top 1 found (≥ 99% of them) and cost at most 0.01 of its recall@10 or
MRR. Absent queries (paraphrase questions with no answer in the store, LongMemEval's
abstention questions) count every item returned as wrong.

Usage (~10 minutes to read the pools without LongMemEval, about a minute a LongMemEval
question more; a minute or two to fit again with ``--reuse``)::

    python -m benchmarks.retrieval.fit --locomo ../shared/datasets/locomo/locomo_dev.json \\
        [--longmemeval ../shared/datasets/longmemeval/longmemeval_s_dev70.json.gz] \\
        --out benchmarks/retrieval/fit

or, with the LongMemEval pools that ``bench retrieval --data <LongMemEval file>`` saved beside
its results (one fill for both), ``--add-pools <out>/longmemeval_pools.pkl``.
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

from benchmarks.retrieval.grading import Flat, Graded
from benchmarks.retrieval.pools import (
    Pool,
    collect_locomo,
    collect_longmemeval,
    collect_paraphrases,
    collect_scenarios,
)
from ralph_context import Settings
from ralph_context.config import ScoringSettings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder

__all__ = ["GRID", "THRESHOLDS", "main"]

# A first, wider search over the families (a noisy-or, a maximum or a weighted sum of the
# two kinds of evidence; BM25 on an absolute scale, over the best hit, or over the best hit
# plus a knee; cosine's evidence absolute, relative to the query's best, or its standout
# among the query's candidates, alone or or-ed) put the weighted sum, the knee and the or-ed
# standout ahead; a second (with the paraphrase set's questions in every fold) put closeness
# to the query's best cosine ahead of the standout (chosen by every fold) and a knee that
# grows with the query's content words. This grid is that family's, semantic_slope fixed at
# 10 (5 and 20 lost).
# Issue 61 widened the cosine centre and the gate upwards for the quality model, whose
# cosines run higher than MiniLM's (the same grid fits either model).
GRID: dict[str, tuple[float, ...]] = {
    "semantic_midpoint": (0.25, 0.3, 0.35, 0.4),
    "semantic_closeness": (0.02, 0.03, 0.05),
    "lexical_knee": (1.0, 2.0, 4.0),
    "lexical_knee_per_word": (0.0, 0.2, 0.3, 0.6),
    "lexical_weight": (0.4, 0.5, 0.6),
    "neighbour_share": (0.5, 0.7),
    "lexical_pass": (0.5,),
    "min_similarity": (0.15, 0.2, 0.25),
}
# LoCoMo's recall@10 is kept at least here (what the last round reached and a check outside
# this repository confirmed on other conversations); the other sets are served within it.
LOCOMO_FLOOR = 0.72
# (score floor, share of the query's best score) pairs the threshold is chosen among.
THRESHOLDS = [
    (floor, share)
    for floor in (0.0, 0.02, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3)
    for share in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
]
FOLDS = 5
# What the threshold may cost a set, and the share of its clear matches it must keep.
RECALL_COST = 0.01
CLEAR_KEPT = 0.99
Mask = NDArray[np.bool_]


@dataclass(frozen=True)
class Point:
    """One grid point: its settings and the gate (similarity and lexical pass)."""

    weights: ScoringSettings
    lexical_pass: float
    gate: float

    def row(self) -> dict[str, float]:
        return {name: self._value(name) for name in GRID}

    def _value(self, name: str) -> float:
        if name == "lexical_pass":
            return self.lexical_pass
        if name == "min_similarity":
            return self.gate
        return float(getattr(self.weights, name))

    def scores(self, flat: Flat) -> NDArray[np.float64]:
        return flat.scores(self.weights, self.gate, self.lexical_pass)


def points(base: ScoringSettings) -> list[Point]:
    names = list(GRID)
    found = []
    for values in itertools.product(*GRID.values()):
        chosen = dict(zip(names, values, strict=True))
        lexical_pass, gate = chosen.pop("lexical_pass"), chosen.pop("min_similarity")
        found.append(Point(base.model_copy(update=chosen), lexical_pass, gate))
    return found


def metric(dataset: str, graded: Graded) -> NDArray[np.float64]:
    """Each query's score on its set's headline measure."""
    return graded.rr if dataset in ("scenarios", "paraphrase") else graded.recall


def per_set(flat: Flat, graded: Graded, mask: Mask) -> dict[str, float]:
    """The headline measure of each set over the queries in ``mask`` (answerable only)."""
    out = {}
    for dataset, rows in flat.sets.items():
        chosen = mask & flat.answerable & rows
        if chosen.any():
            out[dataset] = round(float(metric(dataset, graded)[chosen].mean()), 4)
    return out


def _headline(flat: Flat, graded: Graded) -> NDArray[np.float64]:
    """Each query's headline measure (its set's), in query order."""
    out = np.zeros(len(flat.pools))
    for dataset, rows in flat.sets.items():
        out[rows] = metric(dataset, graded)[rows]
    return out


def choose_threshold(
    flat: Flat, score: NDArray[np.float64], mask: Mask, budget: int
) -> tuple[float, float]:
    """The (floor, relative) pair returning the fewest wrong items on ``mask`` while every
    set keeps its clear matches and its recall (see the module docstring)."""
    # What the threshold costs is measured against the same ranking under the same token
    # budget with no threshold: the budget's own cost (LongMemEval's long turns fill 4,000
    # tokens before 10 items) is no threshold's to pay, and would otherwise forbid them all.
    served = flat.graded(score, budget=budget)
    in_set = {d: mask & rows for d, rows in flat.sets.items()}
    clear = served.top1 > 0
    best: tuple[float, tuple[float, float]] = (np.inf, (0.0, 0.0))
    for floor, share in THRESHOLDS:
        kept = flat.graded(score, min_score=floor, relative=share, budget=budget)
        allowed = True
        for dataset, rows in in_set.items():
            answerable = rows & flat.answerable
            if not answerable.any():
                continue
            loss = (
                metric(dataset, served)[answerable].mean()
                - metric(dataset, kept)[answerable].mean()
            )
            held = (kept.top1[answerable & clear] > 0).mean() if (answerable & clear).any() else 1.0
            if loss > RECALL_COST or held < CLEAR_KEPT:
                allowed = False
                break
        if not allowed:
            continue
        wrong = np.mean([kept.wrong[rows].mean() for rows in in_set.values() if rows.any()])
        if wrong < best[0]:
            best = (float(wrong), (floor, share))
    return best[1]


def report(
    flat: Flat, point: Point, threshold: tuple[float, float], mask: Mask, budget: int
) -> dict[str, Any]:
    """Served and default scores of ``point`` on ``mask``, with what default returns."""
    score = point.scores(flat)
    served = flat.graded(score)
    floor, share = threshold
    default = flat.graded(score, min_score=floor, relative=share, budget=budget)
    absent = mask & ~flat.answerable
    # The other modes at k = 10, no budget: what `bench retrieval` compares default with.
    modes = flat.modes(point.weights)
    others = {mode: per_set(flat, flat.graded(values), mask) for mode, values in modes.items()}
    graded_modes = {"default": default} | {
        mode: flat.graded(values) for mode, values in modes.items()
    }
    paraphrases = mask & flat.answerable & flat.sets.get("paraphrase", np.zeros_like(mask))
    return {
        "served": per_set(flat, served, mask),
        "default": per_set(flat, default, mask),
        **others,
        # The paraphrase set's top-1 per mode (its headline above is MRR@10).
        "paraphrase_top1": {
            mode: round(float(graded.top1[paraphrases].mean()), 4)
            for mode, graded in graded_modes.items()
        }
        if paraphrases.any()
        else None,
        "returned": round(float(default.returned[mask & flat.answerable].mean()), 2),
        "returned_absent": round(float(default.returned[absent].mean()), 2)
        if absent.any()
        else None,
        "empty_answerable": round(float((default.returned[mask & flat.answerable] == 0).mean()), 4),
    }


def folds(flat: Flat) -> NDArray[np.int64]:
    """Each query's fold: every set's groups dealt round-robin in order of appearance."""
    seen: dict[tuple[str, str], int] = {}
    per_set_count: dict[str, int] = {}
    out = np.zeros(len(flat.pools), dtype=np.int64)
    for i, p in enumerate(flat.pools):
        key = (p.dataset, p.group)
        if key not in seen:
            seen[key] = per_set_count.get(p.dataset, 0) % FOLDS
            per_set_count[p.dataset] = per_set_count.get(p.dataset, 0) + 1
        out[i] = seen[key]
    return out


def fit(pools: list[Pool], budget: int) -> dict[str, Any]:
    flat = Flat(pools)
    base = Settings.load(None).scoring
    grid = points(base)
    every = np.ones(len(pools), dtype=bool)
    print(f"fit: {len(pools)} queries, {len(grid)} grid points", flush=True)
    # Each grid point's per-query headline measure, once; a fold's choice is then a mean.
    measures = np.array([_headline(flat, flat.graded(point.scores(flat))) for point in grid])
    fold_of = folds(flat)
    held_out = []

    def best_on(mask: Mask) -> int:
        rows = {name: mask & flat.answerable & chosen for name, chosen in flat.sets.items()}
        means = {name: measures[:, r].mean(axis=1) for name, r in rows.items() if r.any()}
        overall = np.stack(list(means.values())).mean(axis=0)
        if "locomo" in means:
            overall = np.where(means["locomo"] >= LOCOMO_FLOOR, overall, overall - 1.0)
        return int(np.argmax(overall))

    for fold in range(FOLDS):
        train, test = fold_of != fold, fold_of == fold
        best = best_on(train)
        point = grid[best]
        score = point.scores(flat)
        threshold = choose_threshold(flat, score, train, budget)
        row = {"fold": fold, **point.row(), "min_score": threshold[0], "relative": threshold[1]}
        row |= report(flat, point, threshold, test, budget)
        held_out.append(row)
        print(json.dumps(row), flush=True)
    point = grid[best_on(every)]
    score = point.scores(flat)
    threshold = choose_threshold(flat, score, every, budget)
    chosen = {**point.row(), "min_score": threshold[0], "relative": threshold[1]}
    chosen |= report(flat, point, threshold, every, budget)
    return {"held_out": held_out, "chosen_on_all": chosen}


async def collect(args: argparse.Namespace, model: LocalEmbedder, workdir: Path) -> list[Pool]:
    pools = await collect_scenarios(args.scenarios, model, workdir / "scenarios")
    pools += await collect_paraphrases(model, workdir / "paraphrase")
    pools += await collect_locomo(args.locomo, model, workdir / "locomo")
    if args.longmemeval is not None:
        pools += await collect_longmemeval(
            args.longmemeval, model, workdir / "longmemeval", args.longmemeval_questions
        )
    return pools


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON (dev split)")
    parser.add_argument("--longmemeval", type=Path, help="LongMemEval JSON (dev subset)")
    parser.add_argument(
        "--longmemeval-questions", type=int, help="only its first N questions (~1 min each)"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/retrieval/fit"))
    parser.add_argument("--scenarios", type=int, default=48, help="queries per kind")
    parser.add_argument(
        "--reuse", action="store_true", help="fit the pools saved by an earlier run in --out"
    )
    parser.add_argument(
        "--add-pools",
        type=Path,
        action="append",
        default=[],
        help="pools pickled by `bench retrieval` on a LongMemEval file (longmemeval_pools.pkl)",
    )
    args = parser.parse_args(argv)
    saved = args.out / "pools.pkl"
    if args.reuse:
        pools = pickle.loads(saved.read_bytes())
    elif args.locomo is None:
        parser.error("--locomo is needed to read the pools (or --reuse saved ones)")
    else:
        model = load_embedder(Settings.load(None).embeddings)
        with tempfile.TemporaryDirectory(prefix="ralph-fit-") as tmp:
            pools = anyio.run(collect, args, model, Path(tmp))
        args.out.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(pickle.dumps(pools))
    for extra in args.add_pools:
        pools += pickle.loads(extra.read_bytes())
    budget = Settings.load(None).retrieval.max_context_tokens
    result = fit(pools, budget)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fit.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result["chosen_on_all"], indent=2))


if __name__ == "__main__":
    main()
