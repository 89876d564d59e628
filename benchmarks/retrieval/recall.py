"""Evidence recall as LoCoMo's ``task_eval/evaluation.py`` computes it, and its aggregation.

For one question: the fraction of its evidence dia_ids found among the retrieved ids; a
question without evidence counts 1. Per category and overall, the plain mean over questions
(so categories weigh by their number of questions, as in the paper's overall figure).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Recall", "evidence_recall", "summarize"]


def evidence_recall(evidence: Sequence[str], retrieved: Iterable[str]) -> float:
    """|evidence ids among ``retrieved``| / |evidence|, or 1.0 for no evidence.

    Repeated evidence ids count each time, as in the paper's code.
    """
    if not evidence:
        return 1.0
    found = set(retrieved)
    return sum(ev in found for ev in evidence) / len(evidence)


@dataclass(frozen=True)
class Recall:
    """One question's recall at one k."""

    category: int
    k: int
    value: float


def summarize(recalls: Iterable[Recall]) -> dict[str, dict[str, float]]:
    """``{k: {"overall": mean, "<category>": mean, ...}}`` with string keys (JSON-ready)."""
    by_k: dict[int, list[Recall]] = defaultdict(list)
    for recall in recalls:
        by_k[recall.k].append(recall)
    table: dict[str, dict[str, float]] = {}
    for k in sorted(by_k):
        rows = by_k[k]
        cell = {"overall": _mean(r.value for r in rows)}
        for category in sorted({r.category for r in rows}):
            cell[str(category)] = _mean(r.value for r in rows if r.category == category)
        table[str(k)] = cell
    return table


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items)
