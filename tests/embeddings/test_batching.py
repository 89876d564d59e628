"""Batches are length-homogeneous, bounded, and cover every text exactly once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ralph_context.embeddings.batching import plan_batches


def test_lengths_within_a_batch_stay_within_the_ratio() -> None:
    texts = ["a" * n for n in (10, 11, 12, 40, 41, 100, 9, 13)]
    batches = plan_batches(texts, max_size=32, ratio=1.25)
    assert [[len(texts[i]) for i in batch] for batch in batches] == [
        [9, 10, 11],
        [12, 13],
        [40, 41],
        [100],
    ]


@given(
    lengths=st.lists(st.integers(min_value=0, max_value=400), max_size=200),
    size=st.integers(min_value=1, max_value=40),
)
def test_every_text_lands_in_exactly_one_bounded_batch(lengths: list[int], size: int) -> None:
    texts = ["x" * n for n in lengths]
    batches = plan_batches(texts, max_size=size)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(texts)))
    assert all(1 <= len(batch) <= size for batch in batches)
    for batch in batches:
        shortest = max(len(texts[batch[0]]), 8)
        assert all(len(texts[i]) <= 1.25 * shortest for i in batch)
