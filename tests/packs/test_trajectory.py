"""Trajectory kinematics on hand-built paths (unit vectors chosen so every number can be
worked out by hand), and sentence splitting without spaCy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ralph_context.packs.evaluation.sentences import split_sentences
from ralph_context.packs.evaluation.trajectory import analyze, compare
from tests.helpers import unit

ROOT2 = math.sqrt(2)


def path(*points: tuple[float, ...]) -> np.ndarray:
    return np.stack([unit(*p) for p in points])


def test_a_lone_jump_in_a_flat_text_is_a_deadpan_spike() -> None:
    # A A A B A: still, still, jump out, jump back.
    t = analyze(path((1, 0), (1, 0), (1, 0), (0, 1), (1, 0)), threshold=0.3)
    assert t.velocities == pytest.approx((0, 0, ROOT2, ROOT2))
    assert t.accelerations == pytest.approx((0, ROOT2, 0))
    (spike,) = t.spikes
    assert spike.magnitude == pytest.approx(ROOT2)
    assert spike.isolation_score == 1.0  # its neighbours' accelerations are 0
    assert spike.position_ratio == 0.5  # sentence 2 of 0..4
    assert t.tautology_density == 0.5  # two of four steps stand still
    assert t.circularity_score == 1.0  # ends where it began
    assert t.deceleration_score == 0.0  # speed only rises or holds
    assert t.deadpan_score == 1.0
    assert t.heller_score == pytest.approx(0.5 * 1 + 0.25 * 0 + 0.25 * 0.5)
    assert t.mean_velocity == pytest.approx(ROOT2 / 2)
    assert t.max_acceleration == pytest.approx(ROOT2)


def test_a_steady_walk_away_has_no_spikes_and_no_return() -> None:
    # Quarter turns at a constant speed in 3-d: x, y, z.
    t = analyze(path((1, 0, 0), (0, 1, 0), (0, 0, 1)), threshold=0.3)
    assert t.velocities == pytest.approx((ROOT2, ROOT2))
    assert t.accelerations == pytest.approx((0,))
    assert t.spikes == ()
    assert t.deadpan_score == 0.0
    # Farthest point is at distance sqrt(2) and so is the end: no way back.
    assert t.circularity_score == pytest.approx(0.0)
    assert t.tautology_density == 0.0


def test_slowing_down_counts_as_deceleration() -> None:
    # Steps of 90, then 45, then 0 degrees: speed falls twice.
    t = analyze(path((1, 0), (0, 1), (1, 1), (1, 1)), threshold=10.0)
    v1, v2 = ROOT2, math.sqrt(2 - 2 * math.cos(math.pi / 4))
    assert t.velocities == pytest.approx((v1, v2, 0))
    assert t.deceleration_score == 1.0
    assert t.spikes == ()  # threshold above every acceleration


def test_comparing_a_text_with_itself_is_a_perfect_fit() -> None:
    t = analyze(path((1, 0), (1, 0), (1, 0), (0, 1), (1, 0)), threshold=0.3)
    c = compare(t, t, threshold=0.3)
    assert (c.fitness_score, c.acceleration_dtw) == (0.0, 0.0)
    assert c.acceleration_correlation == pytest.approx(1.0)
    assert (c.spike_position_match, c.spike_count_match) == (1.0, 1.0)


def test_a_flat_copy_of_a_spiky_text_fits_badly() -> None:
    spiky = analyze(path((1, 0), (1, 0), (1, 0), (0, 1), (1, 0)), threshold=0.3)
    flat = analyze(path((1, 0), (1, 0), (1, 0), (1, 0), (1, 0)), threshold=0.3)
    c = compare(spiky, flat, threshold=0.3)
    # DTW: [0, r2, 0] against [0, 0, 0] costs r2 over a 3-step path.
    assert c.acceleration_dtw == pytest.approx(ROOT2 / 3, abs=1e-6)
    assert c.acceleration_correlation == 0.0  # the flat profile is constant
    assert (c.spike_position_match, c.spike_count_match) == (0.0, 0.0)
    # mean(min(1, 0.471 / 0.3), (1 - 0) / 2, 1, 1) = (1 + 0.5 + 1 + 1) / 4
    assert c.fitness_score == pytest.approx(0.875)


def test_one_sentence_is_not_a_trajectory() -> None:
    with pytest.raises(ValueError, match="at least two sentences"):
        analyze(path((1, 0)), threshold=0.3)


def test_sentences_split_on_stops_but_not_on_abbreviations_or_decimals() -> None:
    text = (
        'Dr. Smith paid $3.50 at 5 p.m. on Monday. Was it enough? "Yes!" she said. '
        "The U.S. team won, e.g. the relay.\n\nA paragraph without a stop\ncontinues here. "
        "Last one\u2026  Really."
    )
    assert split_sentences(text) == [
        "Dr. Smith paid $3.50 at 5 p.m. on Monday.",
        "Was it enough?",
        '"Yes!" she said.',
        "The U.S. team won, e.g. the relay.",
        "A paragraph without a stop continues here.",
        "Last one\u2026",
        "Really.",
    ]
    assert split_sentences("   ") == []
