"""The served items of many prompts as arrays, so that a gate is graded on all of them at
once, and the figures a gate earns per kind of data.

A gate's rule here is ``ralph_context.retrieval.gate.admits`` written over arrays; a test
holds the two to the same answer for every item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.push.asked import KINDS, Asked
from ralph_context.config.retrieval import PushGate

__all__ = ["Figures", "Table"]

Mask = NDArray[np.bool_]


@dataclass(frozen=True)
class Figures:
    """One kind's (or category's) figures under a gate."""

    answerable: int
    no_answer: int
    recall: float | None  # answer pushed, share of the answerable prompts
    silence: float | None  # nothing pushed, share of the no-answer prompts
    precision: float | None  # answering items among those pushed (None: nothing pushed)
    items_answerable: float  # items pushed per answerable prompt
    items_no_answer: float  # ... per no-answer prompt

    @property
    def balance(self) -> float:
        """The harmonic mean of recall and silence (whichever of the two the kind has): 0
        when either is given up entirely, so no kind is bought with another's silence or
        answers."""
        parts = [x for x in (self.recall, self.silence) if x is not None]
        if not parts or min(parts) <= 0:
            return 0.0
        return float(len(parts) / sum(1 / x for x in parts))

    def as_dict(self) -> dict[str, Any]:
        return {
            "answerable": self.answerable,
            "no_answer": self.no_answer,
            "recall": _round(self.recall),
            "silence": _round(self.silence),
            "precision": _round(self.precision),
            "items_answerable": round(self.items_answerable, 2),
            "items_no_answer": round(self.items_no_answer, 2),
        }


class Table:
    """Every served item of ``asked`` (cosine, BM25 evidence, whether it answers) and every
    prompt (its kind, its category, whether the store answers it)."""

    def __init__(self, asked: Sequence[Asked]) -> None:
        self.asked = list(asked)
        rows = [(q, item) for q, one in enumerate(asked) for item in one.items]
        self.query = np.array([q for q, _ in rows], dtype=np.int64)
        self.cosine = np.array(
            [item.breakdown.get("semantic", np.nan) for _, item in rows], dtype=np.float64
        )
        self.lexical = np.array(
            [item.breakdown.get("lexical", 0.0) for _, item in rows], dtype=np.float64
        )
        self.relevant = np.array([item.relevant for _, item in rows], dtype=np.bool_)
        self.answerable = np.array([one.answerable for one in asked], dtype=np.bool_)
        present = {one.kind for one in asked}
        self.kinds = [k for k in (*KINDS, *sorted(present - set(KINDS))) if k in present]
        kind = np.array([one.kind for one in asked])
        self.of_kind = {k: kind == k for k in self.kinds}

    def __len__(self) -> int:
        return len(self.asked)

    def keep(self, gate: PushGate | None, *, text_tier: bool = False) -> Mask:
        """The items a push under ``gate`` carries (``None``: every item); ``text_tier``
        grades each item without its cosine, as the text tier serves it."""
        if gate is None:
            return np.ones(len(self.query), dtype=np.bool_)
        cosine = np.full_like(self.cosine, np.nan) if text_tier else self.cosine
        semantic = cosine + gate.lexical_weight * self.lexical >= gate.min_evidence
        return np.where(np.isnan(cosine), self.lexical >= gate.min_lexical, semantic)

    def figures(self, keep: Mask, prompts: Mask | None = None) -> Figures:
        """The figures of the ``prompts`` (a mask over the prompts; all by default) when a
        push carries the items ``keep`` marks."""
        n = len(self.asked)
        chosen = np.ones(n, dtype=np.bool_) if prompts is None else prompts
        pushed = np.bincount(self.query[keep], minlength=n)
        relevant = np.bincount(self.query[keep & self.relevant], minlength=n)
        answerable = chosen & self.answerable
        no_answer = chosen & ~self.answerable
        count_a, count_n = int(answerable.sum()), int(no_answer.sum())
        total = int(pushed[chosen].sum())
        return Figures(
            count_a,
            count_n,
            float((relevant[answerable] > 0).mean()) if count_a else None,
            float((pushed[no_answer] == 0).mean()) if count_n else None,
            float(relevant[chosen].sum() / total) if total else None,
            float(pushed[answerable].mean()) if count_a else 0.0,
            float(pushed[no_answer].mean()) if count_n else 0.0,
        )

    def by_kind(self, keep: Mask) -> dict[str, Figures]:
        """:meth:`figures` of each kind, in :data:`~benchmarks.push.asked.KINDS` order."""
        return {kind: self.figures(keep, mask) for kind, mask in self.of_kind.items()}

    def by_category(self, keep: Mask) -> dict[str, dict[str, Figures]]:
        """:meth:`figures` of each kind's categories (LoCoMo's, an everyday prompt's kind)."""
        category = np.array([one.category for one in self.asked])
        return {
            kind: {
                name: self.figures(keep, mask & (category == name))
                for name in sorted(set(category[mask].tolist()))
            }
            for kind, mask in self.of_kind.items()
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
