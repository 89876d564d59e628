"""What the LongMemEval bench measured, aggregated (JSON) and drawn as tables (markdown).

Every metric is a plain mean over the questions it applies to (``None`` values, LongMemEval's
skips, are left out), overall and per question type; ``n`` says over how many.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.retrieval.longmemeval import QUESTION_TYPES, Question

__all__ = [
    "ANCHORS",
    "KS",
    "METRICS",
    "MODES",
    "PRODUCTS",
    "STELLA",
    "QuestionRun",
    "longmemeval_markdown",
    "summarize",
    "write_outputs",
]

MODES = ("default", "served", "vector", "text", "hybrid", "bm25", "cosine")
KS = (5, 10)
METRICS = (
    "turn_any@5",
    "turn_any@10",
    "turn_all@5",
    "turn_all@10",
    "session_any@5",
    "session_any@10",
    "session_all@10",
    "official_any@5",
    "official_any@10",
    # Whether the user turns of the ranking reached k distinct sessions (always, for a
    # ranking of the whole haystack; a short engine ranking may not).
    "official_covered@5",
    "official_covered@10",
)
# From the dataset's README.
STELLA = {  # the paper's best retriever, on the larger M haystacks
    "session_recall@5": 0.732,
    "session_recall@10": 0.862,
    "turn_recall@5": 0.644,
    "turn_recall@10": 0.784,
}
PRODUCTS = (0.95, 0.98)  # session recall_any@5 that memory products publish on S
ANCHORS = {"stella_v5_1.5b_longmemeval_m": STELLA, "memory_products_s_session_any@5": PRODUCTS}


@dataclass
class QuestionRun:
    """Everything measured on one question."""

    question: Question
    turns: int
    ingest_seconds: float
    truncated: int
    metrics: dict[str, dict[str, float | None]] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    # default: items returned per max_items asked; at k=10 the states of those items and
    # the tier that served them ("tier:semantic").
    returned: dict[int, int] = field(default_factory=dict)
    states: Counter[str] = field(default_factory=Counter)
    unmapped: int = 0


def _means(
    rows: Sequence[Mapping[str, float | None]],
) -> tuple[dict[str, float | None], dict[str, int]]:
    means: dict[str, float | None] = {}
    counts: dict[str, int] = {}
    for metric in METRICS:
        values = [v for row in rows if (v := row.get(metric)) is not None]
        means[metric] = round(sum(values) / len(values), 4) if values else None
        counts[metric] = len(values)
    return means, counts


def _percentiles(values: Iterable[float]) -> dict[str, float | None]:
    data = list(values)
    if not data:
        return {"p50": None, "p99": None}
    return {
        "p50": round(float(np.percentile(data, 50)), 2),
        "p99": round(float(np.percentile(data, 99)), 2),
    }


def _returned(runs: Sequence[QuestionRun]) -> dict[str, float | None]:
    asked = sorted({k for run in runs for k in run.returned})
    return {
        f"max_items={k}": round(sum(r.returned[k] for r in runs) / len(runs), 2) if runs else None
        for k in asked
    }


def summarize(runs: Sequence[QuestionRun], *, data: Path, wall_seconds: float) -> dict[str, Any]:
    """The results dict (JSON-ready) of a run."""
    answerable = [r for r in runs if not r.question.abstention]
    abstaining = [r for r in runs if r.question.abstention]
    types = [t for t in QUESTION_TYPES if any(r.question.question_type == t for r in runs)]
    types += sorted({r.question.question_type for r in runs} - set(types))
    modes: dict[str, Any] = {}
    for mode in MODES:
        overall, counts = _means([r.metrics[mode] for r in runs])
        by_type = {}
        for kind in types:
            means, n = _means([r.metrics[mode] for r in runs if r.question.question_type == kind])
            by_type[kind] = {"means": means, "n": n}
        modes[mode] = {
            "overall": overall,
            "n": counts,
            "by_type": by_type,
            "latency_ms": _percentiles(r.latency_ms[mode] for r in runs),
        }
    turns = sum(r.turns for r in runs)
    seconds = sum(r.ingest_seconds for r in runs)
    states: Counter[str] = Counter()
    for run in runs:
        states.update(run.states)
    return {
        "data": str(data),
        "questions": len(runs),
        "answerable": len(answerable),
        "abstention": len(abstaining),
        "modes": modes,
        "default_returned": {
            "answerable": _returned(answerable),
            "abstention": _returned(abstaining),
            "abstention_at_10": {r.question.question_id: r.returned.get(10) for r in abstaining},
            "states_at_10": dict(states),
        },
        "ingest": {
            "turns": turns,
            "seconds": round(seconds, 1),
            "turns_per_second": round(turns / seconds, 1) if seconds else None,
            "truncated_turns": sum(r.truncated for r in runs),
        },
        "unmapped_items": sum(r.unmapped for r in runs),
        "wall_seconds": round(wall_seconds, 1),
        "reference": ANCHORS,
        "per_question": [
            {
                "question_id": r.question.question_id,
                "question_type": r.question.question_type,
                "abstention": r.question.abstention,
                "turns": r.turns,
                "ingest_seconds": round(r.ingest_seconds, 2),
                "default_returned": {str(k): v for k, v in r.returned.items()},
                "latency_ms": {mode: round(ms, 2) for mode, ms in r.latency_ms.items()},
                "metrics": r.metrics,
            }
            for r in runs
        ],
        "notes": (
            "default/served: one Engine.search per k (5, 10) for the turn metrics and one at "
            "max_items=50 for the session and official metrics; their latency is the k=10 "
            "call. vector/text/hybrid share one Engine.candidates(limit=200) call. bm25/cosine "
            "latency is scoring one query against a built index / the stored vectors (cosine "
            "includes embedding the query). Turn metrics skip questions without a has_answer "
            "turn; official ones skip questions without one on the user side (LongMemEval's "
            "rule); abstention questions are skipped everywhere."
        ),
    }


_OVERALL = (
    ("turn R@5", "turn_any@5"),
    ("turn R@10", "turn_any@10"),
    ("turn R_all@10", "turn_all@10"),
    ("sess R_any@5", "session_any@5"),
    ("sess R_any@10", "session_any@10"),
    ("sess R_all@10", "session_all@10"),
    ("official sess R@5", "official_any@5"),
    ("official sess R@10", "official_any@10"),
)
_BY_TYPE = (
    ("turn R@10", "turn_any@10"),
    ("turn R_all@10", "turn_all@10"),
    ("sess R_any@5", "session_any@5"),
    ("sess R_all@10", "session_all@10"),
    ("official sess R@5", "official_any@5"),
)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def longmemeval_markdown(results: dict[str, Any]) -> str:
    """Overall per mode, per question type (default and the baselines), abstention, anchors."""
    ingest = results["ingest"]
    modes = results["modes"]
    lines = [
        f"LongMemEval-S retrieval, {results['questions']} questions ({results['answerable']} "
        f"answerable, {results['abstention']} abstention); {ingest['turns']} turns ingested "
        f"in {ingest['seconds']} s ({ingest['turns_per_second']} turns/s); wall "
        f"{results['wall_seconds']} s. Recall in %.",
        "",
        "| mode | " + " | ".join(name for name, _ in _OVERALL) + " | p50 ms | p99 ms |",
        "| --- |" + " --- |" * (len(_OVERALL) + 2),
    ]
    for mode, row in modes.items():
        cells = [_cell(row["overall"][metric]) for _, metric in _OVERALL]
        latency = row["latency_ms"]
        lines.append(f"| {mode} | {' | '.join(cells)} | {latency['p50']} | {latency['p99']} |")
    counts = modes["default"]["n"]
    covered = " / ".join(
        f"{mode} {_cell(modes[mode]['overall']['official_covered@10'])}"
        for mode in ("default", "served", "vector", "text", "hybrid")
    )
    lines += [
        "",
        f"n: turn {counts['turn_any@10']}, session {counts['session_any@10']}, official "
        f"{counts['official_any@5']} questions. Official = LongMemEval's own: user turns only, "
        "k widened to k distinct sessions; the ranking reached 10 sessions (%): " + covered + ".",
        "",
        "By question type:",
        "",
        "| type | mode | n | " + " | ".join(name for name, _ in _BY_TYPE) + " |",
        "| --- | --- | --- |" + " --- |" * len(_BY_TYPE),
    ]
    for kind in modes["default"]["by_type"]:
        for mode in ("default", "bm25", "cosine"):
            cell = modes[mode]["by_type"][kind]
            values = [_cell(cell["means"][metric]) for _, metric in _BY_TYPE]
            lines.append(
                f"| {kind} | {mode} | {cell['n']['session_any@5']} | {' | '.join(values)} |"
            )
    returned = results["default_returned"]
    asked = list(returned["answerable"] or returned["abstention"])
    lines += [
        "",
        "default: items returned (mean) per max_items asked:",
        "",
        "| questions | " + " | ".join(asked) + " |",
        "| --- |" + " --- |" * len(asked),
    ]
    for group, count in (
        ("answerable", results["answerable"]),
        ("abstention", results["abstention"]),
    ):
        cells = [str(returned[group].get(k, "-")) for k in asked]
        lines.append(f"| {group} ({count}) | {' | '.join(cells)} |")
    stella = STELLA
    lines += [
        "",
        "Anchors (dataset README; not the same set or runner):",
        "",
        "| reference | session R@5 | session R@10 | turn R@5 | turn R@10 |",
        "| --- | --- | --- | --- | --- |",
        f"| Stella V5 1.5B, paper, LongMemEval-M | {_cell(stella['session_recall@5'])} | "
        f"{_cell(stella['session_recall@10'])} | {_cell(stella['turn_recall@5'])} | "
        f"{_cell(stella['turn_recall@10'])} |",
        f"| memory products, published, S | {_cell(PRODUCTS[0])}-{_cell(PRODUCTS[1])} "
        "(recall_any@5) | | | |",
    ]
    return "\n".join(lines) + "\n"


def write_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    """``longmemeval.json`` and ``longmemeval.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "longmemeval.json", out / "longmemeval.md"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(longmemeval_markdown(results), encoding="utf-8")
    return paths
