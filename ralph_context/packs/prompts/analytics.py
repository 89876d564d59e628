"""Prompt analytics computed from the stored records and outcome log.

- ``total_prompts``: prompts created or given feedback in the time range.
- ``avg_success_rate``: mean of those prompts' current success rates (EMA).
- ``improvement_trend``: least-squares slope of observed success (1 for a success, 0 for a
  failure) against time, in success-rate points per day, over the outcomes in range; 0 when
  fewer than two distinct moments were observed.
- ``by_domain``: count and mean success per domain (``unclassified`` when none was given).
- ``top_patterns``: for each structural pattern (``patterns.py``) shown by at least one
  prompt, the mean success rate of the prompts showing it, best first.
- ``averages``: the mean of each requested metric over the prompts in range
  (``satisfaction`` over the outcomes that reported one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import fmean
from typing import Literal

from ralph_context.packs.prompts.patterns import detect
from ralph_context.packs.prompts.store import OutcomeRow, PromptRecord

__all__ = ["Analytics", "Metric", "compute"]

Metric = Literal[
    "success_rate", "token_efficiency", "avg_latency_ms", "observation_count", "satisfaction"
]
UNCLASSIFIED = "unclassified"
_DAY = 86_400.0


@dataclass(frozen=True)
class Analytics:
    total_prompts: int
    avg_success_rate: float | None
    improvement_trend: float
    outcomes: int
    averages: dict[str, float | None]
    by_domain: dict[str, dict[str, float | int | None]]
    top_patterns: list[dict[str, float | int | str]]


def compute(
    records: Sequence[PromptRecord],
    outcomes: Sequence[OutcomeRow],
    *,
    start: datetime | None,
    metrics: Sequence[Metric],
) -> Analytics:
    """Analytics over prompts active since ``start`` (all when ``None``)."""
    active_ids = {outcome.prompt_id for outcome in outcomes}
    active = [r for r in records if start is None or r.created_at >= start or r.id in active_ids]
    domains: dict[str, list[PromptRecord]] = {}
    for record in active:
        domains.setdefault(record.domain or UNCLASSIFIED, []).append(record)
    by_domain = {
        name: {
            "count": len(members),
            "avg_success": _mean([m.metrics.success_rate for m in members]),
            **{
                f"avg_{metric}": _average(metric, members, outcomes, domain=name)
                for metric in metrics
                if metric != "success_rate"
            },
        }
        for name, members in sorted(domains.items())
    }
    return Analytics(
        total_prompts=len(active),
        avg_success_rate=_mean([r.metrics.success_rate for r in active]),
        improvement_trend=round(_slope(outcomes), 6),
        outcomes=len(outcomes),
        averages={metric: _average(metric, active, outcomes) for metric in metrics},
        by_domain=by_domain,
        top_patterns=_patterns(active),
    )


def _average(
    metric: Metric,
    records: Sequence[PromptRecord],
    outcomes: Sequence[OutcomeRow],
    *,
    domain: str | None = None,
) -> float | None:
    if metric == "satisfaction":
        return _mean(
            [
                o.satisfaction
                for o in outcomes
                if o.satisfaction is not None
                and (domain is None or (o.domain or UNCLASSIFIED) == domain)
            ]
        )
    values = [getattr(r.metrics, metric) for r in records]
    return _mean([float(v) for v in values if v is not None])


def _patterns(records: Sequence[PromptRecord]) -> list[dict[str, float | int | str]]:
    members: dict[str, list[float]] = {}
    for record in records:
        for name in detect(record.prompt_text):
            members.setdefault(name, []).append(record.metrics.success_rate)
    ranked: list[dict[str, float | int | str]] = [
        {"pattern": name, "success_rate": round(fmean(rates), 4), "prompts": len(rates)}
        for name, rates in members.items()
    ]
    return sorted(ranked, key=lambda p: (-float(p["success_rate"]), str(p["pattern"])))


def _slope(outcomes: Sequence[OutcomeRow]) -> float:
    """Least-squares slope of success (0/1) over time in days."""
    if len({o.recorded_at for o in outcomes}) < 2:
        return 0.0
    origin = min(o.recorded_at for o in outcomes)
    xs = [(o.recorded_at - origin).total_seconds() / _DAY for o in outcomes]
    ys = [1.0 if o.success else 0.0 for o in outcomes]
    mean_x, mean_y = fmean(xs), fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def _mean(values: Sequence[float]) -> float | None:
    return round(fmean(values), 6) if values else None
