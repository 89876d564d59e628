"""Group texts into embedding batches that waste little work on padding.

A batch is padded to its longest text, and each model call has a fixed cost besides, so
the plan trades padding against calls. Texts are ordered by token count and cut where
padded tokens plus :data:`CALL_COST` per call add up least (an exact dynamic programme over
the sorted lengths). Measured on 512 LoCoMo turns sent 64 at a time (MiniLM int8, 2 cores):
this plan embedded 246-252 texts/s, against 209-233 for cuts made whenever a text was 1.25x
the batch's shortest in characters, and 238-241 for all 512 sorted by characters in fixed
batches of 32; over all 512 at once it ran 290-301.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CALL_COST", "plan_batches"]

# A model call's fixed cost in padded-token slots. Measured: ~1.5-4 ms per call against
# ~0.08 ms per token here; 50 beat 12, 25, 100 and 200 on the texts above.
CALL_COST = 50


def plan_batches(
    lengths: Sequence[int], max_size: int, call_cost: float = CALL_COST
) -> list[list[int]]:
    """Indices of the texts whose token counts are ``lengths``, grouped shortest first into
    batches of at most ``max_size``, minimising padded tokens plus ``call_cost`` per batch."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    ordered = [max(1, lengths[i]) for i in order]
    count = len(ordered)
    cost = [0.0] + [float("inf")] * count
    start_of = [0] * (count + 1)
    for end in range(1, count + 1):
        # A batch ending at ``end`` is padded to ordered[end - 1], its longest.
        longest = ordered[end - 1]
        for start in range(max(0, end - max_size), end):
            candidate = cost[start] + call_cost + (end - start) * longest
            if candidate < cost[end]:
                cost[end] = candidate
                start_of[end] = start
    batches: list[list[int]] = []
    end = count
    while end > 0:
        start = start_of[end]
        batches.append(order[start:end])
        end = start
    batches.reverse()
    return batches
