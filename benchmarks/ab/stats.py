"""Statistics for the A/B comparison, written out so each number can be checked by hand.

- Mann-Whitney U (two-sided), normal approximation with tie correction and continuity
  correction — what ``scipy.stats.mannwhitneyu(method="asymptotic")`` computes. Iteration
  counts are small integers with many ties, where the exact distribution does not apply.
- Effect size: rank-biserial correlation ``r = 1 - 2·U_b / (n_a·n_b)`` with ``U_b`` the U of
  the second sample: +1 when every value of ``b`` is below every value of ``a`` (for
  iterations: memory always needed fewer), 0 for no difference, -1 the other way.
- 95% confidence interval of a mean: ``mean ± 1.96·s/√n`` (normal approximation; ``s`` the
  sample standard deviation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MannWhitney", "mann_whitney", "mean_ci", "ranks"]


@dataclass(frozen=True)
class MannWhitney:
    u_a: float
    u_b: float
    z: float
    p_value: float
    effect_size: float


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end) / 2 + 1
        for position in range(start, end + 1):
            result[order[position]] = shared
        start = end + 1
    return result


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    """Two-sided test that ``a`` and ``b`` come from the same distribution.

    Raises:
        ValueError: Either sample is empty.
    """
    n_a, n_b = len(a), len(b)
    if not n_a or not n_b:
        raise ValueError("both samples need at least one value")
    joint = [*a, *b]
    ranked = ranks(joint)
    u_a = sum(ranked[:n_a]) - n_a * (n_a + 1) / 2
    u_b = n_a * n_b - u_a
    n = n_a + n_b
    ties = sum(t**3 - t for t in _tie_sizes(joint))
    variance = n_a * n_b / 12 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    mean = n_a * n_b / 2
    if variance <= 0:
        z, p_value = 0.0, 1.0
    else:
        distance = max(abs(u_a - mean) - 0.5, 0.0)
        z = distance / math.sqrt(variance)
        p_value = min(1.0, math.erfc(z / math.sqrt(2)))
    return MannWhitney(u_a, u_b, z, p_value, 1 - 2 * u_b / (n_a * n_b))


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)`` of a 95% normal-approximation interval; one value: zero width."""
    if not values:
        raise ValueError("no values")
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, mean, mean
    deviation = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    half = 1.96 * deviation / math.sqrt(len(values))
    return mean, mean - half, mean + half


def _tie_sizes(values: Sequence[float]) -> list[int]:
    counts: dict[float, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return [c for c in counts.values() if c > 1]
