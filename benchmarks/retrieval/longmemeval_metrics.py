"""LongMemEval's retrieval metrics, as its own code computes them.

Read from github.com/xiaowu0162/LongMemEval at 9e0b455 (``src/retrieval/eval_utils.py``:
``evaluate_retrieval``, ``evaluate_retrieval_turn2session``; ``src/retrieval/run_retrieval.py``:
``process_item_flat_index``, the corpus ids, ``correct_docs`` and the averaging):

- ``recall_any@k``: some evidence unit is among the top k; ``recall_all@k``: every one is.
  Each is 0 or 1 per question and averaged over questions. Questions whose id contains
  ``_abs`` are skipped, and so are questions without a ``has_answer`` turn on the user side
  (every ``single-session-assistant`` question: its evidence is an assistant turn).
- The official turn index is flat and holds **user turns only**, each with the id
  ``{session id}_{turn index + 1}``; in a session whose id contains ``answer``, a user turn
  without ``has_answer`` is renamed ``noans...``. The evidence (``correct_docs``) is every
  corpus id still containing ``answer``.
- Session metrics from that turn ranking (``evaluate_retrieval_turn2session``): a turn's
  session is its id less the last ``_`` part, and k is widened until the top turns cover k
  distinct sessions. Because of the renaming, the non-evidence turns of an evidence session
  count as another session (``noans_...``): only an evidence turn retrieves its session.

Our own variants (``recall``, ``session_recall``) use every turn (user and assistant): turn
evidence is every ``has_answer`` turn, session evidence is ``answer_session_ids``, and a
ranking's sessions are its turns' sessions, each counted once, in rank order.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from benchmarks.retrieval.longmemeval import Question, Turn

__all__ = [
    "OfficialRecall",
    "distinct",
    "official_evidence",
    "official_session_recall",
    "official_turn_id",
    "recall",
    "session_recall",
]


def recall(ranked: Sequence[str], evidence: Collection[str], k: int) -> tuple[float, float]:
    """``(recall_any, recall_all)`` of the units ``ranked[:k]`` (``evaluate_retrieval``)."""
    top = set(ranked[:k])
    return float(any(e in top for e in evidence)), float(all(e in top for e in evidence))


def distinct(units: Iterable[str]) -> list[str]:
    """``units`` with repeats dropped, first occurrence kept, order kept."""
    return list(dict.fromkeys(units))


def session_recall(
    ranked_turns: Sequence[Turn], evidence: Collection[str], k: int
) -> tuple[float, float]:
    """``(recall_any, recall_all)`` of the first k distinct sessions of a turn ranking."""
    return recall(distinct(turn.session_id for turn in ranked_turns), evidence, k)


def official_turn_id(turn: Turn) -> str:
    """The id LongMemEval's flat turn index gives a user turn (``process_item_flat_index``)."""
    unit = turn.unit
    if "answer" in turn.session_id and not turn.has_answer:
        return unit.replace("answer", "noans")
    return unit


def official_evidence(question: Question) -> frozenset[str]:
    """``correct_docs``: the ids of the official index (user turns) that contain ``answer``."""
    ids = (official_turn_id(turn) for turn in question.turns if turn.role == "user")
    return frozenset(i for i in ids if "answer" in i)


@dataclass(frozen=True)
class OfficialRecall:
    """Session recall from a user-turn ranking, k widened to k sessions."""

    any: float
    all: float
    # How many top turns were needed, and whether the ranking (which may be shorter than the
    # whole index) reached k distinct sessions at all.
    effective_k: int
    covered: bool


def official_session_recall(
    ranked_ids: Sequence[str], correct: Collection[str], k: int
) -> OfficialRecall:
    """``evaluate_retrieval_turn2session`` on official turn ids, best first.

    LongMemEval ranks the whole index; ours may be a prefix (an engine mode returns at most
    a few dozen turns), so widening stops at its end: ``covered`` says whether it got there.
    """

    def session_of(turn_id: str) -> str:
        return "_".join(turn_id.split("_")[:-1])

    sessions = [session_of(i) for i in ranked_ids]
    evidence = {session_of(i) for i in correct}
    effective = k
    while effective <= len(sessions) and len(set(sessions[:effective])) < k:
        effective += 1
    top = set(sessions[:effective])
    return OfficialRecall(
        any=float(any(e in top for e in evidence)),
        all=float(all(e in top for e in evidence)),
        effective_k=effective,
        covered=len(top) >= k,
    )
