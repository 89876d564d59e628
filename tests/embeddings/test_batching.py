"""Batches cover every text once, stay bounded, and cost the least padding plus calls."""

from __future__ import annotations

from functools import cache

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ralph_context.embeddings.batching import plan_batches
from ralph_context.embeddings.local import LocalEmbedder


def cost(lengths: list[int], batches: list[list[int]], call_cost: float) -> float:
    return sum(call_cost + len(b) * max(max(1, lengths[i]) for i in b) for b in batches)


def cheapest(lengths: list[int], max_size: int, call_cost: float) -> float:
    """Brute force: every way of cutting the sorted lengths into bounded runs."""
    ordered = sorted(max(1, n) for n in lengths)

    @cache
    def best(start: int) -> float:
        if start == len(ordered):
            return 0.0
        return min(
            call_cost + (end - start) * ordered[end - 1] + best(end)
            for end in range(start + 1, min(len(ordered), start + max_size) + 1)
        )

    return best(0)


@given(
    lengths=st.lists(st.integers(min_value=0, max_value=600), max_size=200),
    size=st.integers(min_value=1, max_value=40),
)
def test_every_text_lands_in_exactly_one_bounded_batch(lengths: list[int], size: int) -> None:
    batches = plan_batches(lengths, max_size=size)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(1 <= len(batch) <= size for batch in batches)


@given(
    lengths=st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=14),
    size=st.integers(min_value=1, max_value=8),
    call_cost=st.sampled_from([0.0, 10.0, 50.0, 400.0]),
)
def test_the_plan_is_the_cheapest_cut(lengths: list[int], size: int, call_cost: float) -> None:
    batches = plan_batches(lengths, max_size=size, call_cost=call_cost)
    assert cost(lengths, batches, call_cost) == cheapest(lengths, size, call_cost)


def test_an_outlier_gets_its_own_batch_and_equal_texts_share_one() -> None:
    lengths = [12] * 20 + [300] + [14] * 5
    batches = plan_batches(lengths, max_size=32, call_cost=50)
    assert batches == [list(range(20)) + list(range(21, 26)), [20]]


def test_calls_are_not_split_for_a_few_tokens_of_padding() -> None:
    """A call costs more than padding ten texts by one token each."""
    assert len(plan_batches([20] * 10 + [21] * 10, max_size=32, call_cost=50)) == 1
    assert len(plan_batches([20] * 10 + [21] * 10, max_size=32, call_cost=5)) == 2


def test_token_counts_come_from_the_models_tokenizer(embedder: LocalEmbedder) -> None:
    counts = embedder.token_counts(["hello world", "", "word " * 2000])
    assert counts[0] == 4  # [CLS] hello world [SEP]
    assert counts[1] == 2
    assert counts[2] == 512  # truncated where the model truncates


def test_a_planned_embedding_equals_one_text_at_a_time(embedder: LocalEmbedder) -> None:
    texts = ["short", "a much longer sentence about the build failing on CI", "mid text", "x"]
    planned = np.empty((len(texts), embedder.dimension), dtype=np.float32)
    for batch in embedder.plan(texts, 32):
        planned[batch] = embedder.embed([texts[i] for i in batch], len(batch))
    alone = np.vstack([embedder.embed([text], 1) for text in texts])
    assert np.allclose(planned, alone, atol=1e-5)
