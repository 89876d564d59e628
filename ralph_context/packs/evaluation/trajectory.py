"""Semantic trajectories: a text as a path of sentence embeddings, and its kinematics.

These are heuristics in the spirit of the prompt-prix spec, not validated measures of style:
they turn "does this text jump, stall or circle back?" into numbers that can be compared
between texts embedded by the same model. With ``e[i]`` the unit embedding of sentence ``i``
(``n`` sentences):

- velocity ``v[i] = ‖e[i+1] - e[i]‖`` (``n-1`` values, 0-2);
  acceleration ``a[i] = |v[i+1] - v[i]|`` (``n-2`` values), located at sentence ``i+1``.
- spikes: accelerations ``≥ threshold``. ``position_ratio = (i+1)/(n-1)``;
  ``isolation_score = 1 - mean(a[j] for the other j with |j-i| ≤ 2) / a[i]``, clamped to
  [0, 1] (1 = the spike rises from a flat neighbourhood).
- ``tautology_density``: share of velocities below ``STALL = 0.35`` (cosine above ~0.94
  between consecutive sentences: restating, not moving).
- ``circularity_score``: ``1 - ‖e[n-1] - e[0]‖ / max_i ‖e[i] - e[0]‖`` (0 when the path never
  leaves its start): how much of the way out the text comes back.
- ``deceleration_score``: ``Σ max(0, v[i] - v[i+1]) / Σ |v[i+1] - v[i]|``: the share of speed
  changes that are slow-downs (0.5 = as much speeding up as slowing down).
- ``deadpan_score``: ``max isolation over spikes * background calm``, where calm is
  ``1 - mean(non-spike a) / threshold`` clamped to [0, 1] (Adams: a lone jump in a flat
  delivery). 0 without spikes.
- ``heller_score``: ``0.5·circularity + 0.25·deceleration + 0.25·tautology`` (Heller: talk that
  slows down and comes back to where it began).

Comparing two texts (``compare``), on their acceleration profiles:
- ``acceleration_dtw``: dynamic-time-warping cost with ``|x - y|`` steps, divided by the
  warping path's length (a mean absolute difference after alignment).
- ``acceleration_correlation``: Pearson r after resampling both profiles to the longer length
  (0 when either is constant or too short).
- ``spike_position_match``: ``1 - mean over golden spikes of the distance to the nearest
  synthetic spike's position`` (1 when neither has spikes, 0 when only one has).
- ``spike_count_match``: ``1 - |count_g - count_s| / max(count_g, count_s)`` (1 when both 0).
- ``fitness_score`` (0-1, lower = closer): the mean of ``min(1, dtw / threshold)``,
  ``(1 - correlation) / 2``, ``1 - spike_position_match`` and ``1 - spike_count_match``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Comparison", "Spike", "Trajectory", "analyze", "compare"]

Matrix = NDArray[np.float32]
STALL = 0.35
_NEIGHBOURS = 2


@dataclass(frozen=True)
class Spike:
    magnitude: float
    isolation_score: float
    position_ratio: float
    sentence_index: int


@dataclass(frozen=True)
class Trajectory:
    n_sentences: int
    velocities: tuple[float, ...]
    accelerations: tuple[float, ...]
    spikes: tuple[Spike, ...]
    mean_velocity: float
    mean_acceleration: float
    max_acceleration: float
    deadpan_score: float
    heller_score: float
    circularity_score: float
    tautology_density: float
    deceleration_score: float


@dataclass(frozen=True)
class Comparison:
    fitness_score: float
    acceleration_dtw: float
    acceleration_correlation: float
    spike_position_match: float
    spike_count_match: float


def analyze(embeddings: Matrix, threshold: float) -> Trajectory:
    """The trajectory of ``embeddings`` (one unit row per sentence, at least two)."""
    n = int(embeddings.shape[0])
    if n < 2:
        raise ValueError("a trajectory needs at least two sentences")
    steps = np.diff(embeddings.astype(np.float64), axis=0)
    velocity = np.linalg.norm(steps, axis=1)
    acceleration = np.abs(np.diff(velocity))
    spikes = _spikes(acceleration, threshold, n)
    tautology = float(np.mean(velocity < STALL))
    circularity = _circularity(embeddings.astype(np.float64))
    deceleration = _deceleration(velocity)
    return Trajectory(
        n_sentences=n,
        velocities=_rounded(velocity),
        accelerations=_rounded(acceleration),
        spikes=spikes,
        mean_velocity=_round(float(velocity.mean())),
        mean_acceleration=_round(float(acceleration.mean())) if acceleration.size else 0.0,
        max_acceleration=_round(float(acceleration.max())) if acceleration.size else 0.0,
        deadpan_score=_round(_deadpan(acceleration, spikes, threshold)),
        heller_score=_round(0.5 * circularity + 0.25 * deceleration + 0.25 * tautology),
        circularity_score=_round(circularity),
        tautology_density=_round(tautology),
        deceleration_score=_round(deceleration),
    )


def compare(golden: Trajectory, synthetic: Trajectory, threshold: float) -> Comparison:
    """How closely ``synthetic`` follows ``golden``'s rhythm (see the module docstring)."""
    a, b = np.asarray(golden.accelerations), np.asarray(synthetic.accelerations)
    dtw = _dtw(a, b)
    correlation = _correlation(a, b)
    position = _position_match(golden.spikes, synthetic.spikes)
    count_g, count_s = len(golden.spikes), len(synthetic.spikes)
    count = (
        1.0 if max(count_g, count_s) == 0 else 1 - abs(count_g - count_s) / max(count_g, count_s)
    )
    parts = (min(1.0, dtw / threshold), (1 - correlation) / 2, 1 - position, 1 - count)
    return Comparison(
        fitness_score=_round(sum(parts) / len(parts)),
        acceleration_dtw=_round(dtw),
        acceleration_correlation=_round(correlation),
        spike_position_match=_round(position),
        spike_count_match=_round(count),
    )


def _spikes(acceleration: NDArray[np.float64], threshold: float, n: int) -> tuple[Spike, ...]:
    found = []
    for i, magnitude in enumerate(acceleration.tolist()):
        if magnitude < threshold or magnitude == 0:
            continue
        low, high = max(0, i - _NEIGHBOURS), min(len(acceleration), i + _NEIGHBOURS + 1)
        others = [acceleration[j] for j in range(low, high) if j != i]
        isolation = 1.0 - (float(np.mean(others)) / magnitude if others else 0.0)
        found.append(
            Spike(
                magnitude=_round(magnitude),
                isolation_score=_round(min(max(isolation, 0.0), 1.0)),
                position_ratio=_round((i + 1) / (n - 1)),
                sentence_index=i + 1,
            )
        )
    return tuple(found)


def _deadpan(
    acceleration: NDArray[np.float64], spikes: tuple[Spike, ...], threshold: float
) -> float:
    if not spikes:
        return 0.0
    background = acceleration[acceleration < threshold]
    calm = 1.0 - (float(background.mean()) / threshold if background.size else 0.0)
    return max(s.isolation_score for s in spikes) * min(max(calm, 0.0), 1.0)


def _circularity(embeddings: NDArray[np.float64]) -> float:
    reach = np.linalg.norm(embeddings - embeddings[0], axis=1)
    farthest = float(reach.max())
    return 0.0 if farthest == 0 else 1.0 - float(reach[-1]) / farthest


def _deceleration(velocity: NDArray[np.float64]) -> float:
    changes = np.diff(velocity)
    total = float(np.abs(changes).sum())
    return 0.0 if total == 0 else float(np.clip(-changes, 0, None).sum()) / total


def _dtw(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """Mean |x - y| along the cheapest monotone alignment (length-normalised DTW)."""
    if a.size == 0 or b.size == 0:
        return float(abs(a.sum() - b.sum()))
    cost = np.full((a.size + 1, b.size + 1), np.inf)
    steps = np.zeros((a.size + 1, b.size + 1))
    cost[0, 0] = 0.0
    for i in range(1, a.size + 1):
        for j in range(1, b.size + 1):
            options = (
                (cost[i - 1, j - 1], i - 1, j - 1),
                (cost[i - 1, j], i - 1, j),
                (cost[i, j - 1], i, j - 1),
            )
            best, pi, pj = min(options, key=lambda option: option[0])
            cost[i, j] = best + abs(a[i - 1] - b[j - 1])
            steps[i, j] = steps[pi, pj] + 1
    return float(cost[a.size, b.size] / steps[a.size, b.size])


def _correlation(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    size = max(a.size, b.size)
    if min(a.size, b.size) < 2:
        return 0.0
    grid = np.linspace(0.0, 1.0, size)
    x = np.interp(grid, np.linspace(0.0, 1.0, a.size), a)
    y = np.interp(grid, np.linspace(0.0, 1.0, b.size), b)
    if x.std() == 0 or y.std() == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def _position_match(golden: tuple[Spike, ...], synthetic: tuple[Spike, ...]) -> float:
    if not golden and not synthetic:
        return 1.0
    if not golden or not synthetic:
        return 0.0
    gaps = [min(abs(g.position_ratio - s.position_ratio) for s in synthetic) for g in golden]
    return 1.0 - float(np.mean(gaps))


def _round(value: float) -> float:
    return round(float(value), 6)


def _rounded(values: NDArray[np.float64]) -> tuple[float, ...]:
    return tuple(_round(v) for v in values.tolist())
