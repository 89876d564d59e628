"""What one engine saw since it started, kept in memory for the console's health page:
retrieval latencies, the tiers that served, lifecycle passes and usefulness feedback.

Nothing here is persisted: a restart starts afresh, which is what "since start" means. Every
record is bounded (a histogram of fixed size, rings of recent events), so a server that runs
for months holds no more than one that just started.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

from ralph_context.models import Tier

__all__ = [
    "FeedbackEvent",
    "Latency",
    "LatencyHistogram",
    "Observations",
    "PassRecord",
    "TierChange",
]

# Latencies fall in buckets 2% wide from 10 µs up (past the last bucket, the last bucket):
# a percentile read from them is within 2% of the true value, in 1,100 counters whatever
# the number of searches.
_FIRST_MS = 0.01
_GROWTH = 1.02
_BUCKETS = 1_100


@dataclass(frozen=True)
class Latency:
    """Percentiles of the retrievals since start (milliseconds, within 2%)."""

    count: int
    p50: float
    p99: float
    max: float


class LatencyHistogram:
    """Every latency since start in log-spaced buckets: percentiles in bounded memory."""

    def __init__(self) -> None:
        self._counts = [0] * _BUCKETS
        self.count = 0
        self.max = 0.0

    def add(self, ms: float) -> None:
        bucket = 0 if ms <= _FIRST_MS else int(math.log(ms / _FIRST_MS, _GROWTH)) + 1
        self._counts[min(bucket, _BUCKETS - 1)] += 1
        self.count += 1
        self.max = max(self.max, ms)

    def percentile(self, q: float) -> float:
        """The upper bound of the bucket holding the ``q``-th percentile (0 when empty)."""
        if not self.count:
            return 0.0
        rank = max(1, math.ceil(q / 100 * self.count))
        seen = 0
        for bucket, count in enumerate(self._counts):
            seen += count
            if seen >= rank:
                return min(_FIRST_MS * _GROWTH**bucket, self.max)
        return self.max

    def summary(self) -> Latency:
        return Latency(self.count, self.percentile(50), self.percentile(99), self.max)


@dataclass(frozen=True)
class TierChange:
    """A retrieval served from another tier than the one before it."""

    at: datetime
    tier: Tier
    reason: str | None


@dataclass(frozen=True)
class PassRecord:
    """One lifecycle pass, as the console lists it: what it did, with the ids it touched."""

    at: datetime
    kind: str
    dry_run: bool
    iteration: int
    summarized: tuple[str, ...]
    archived: tuple[str, ...]
    pruned: tuple[str, ...]
    aged: int
    chars_saved: int
    summarizer: str
    notes: tuple[str, ...]


@dataclass(frozen=True)
class FeedbackEvent:
    """One ``mark_useful`` call and the usefulness it left."""

    at: datetime
    item_id: str
    helpful: bool
    usefulness: float
    reason: str | None


class Observations:
    """The engine's in-process record (see the module's docstring).

    Args:
        history: Tier changes and lifecycle passes kept (the newest).
        feedback: Feedback events kept (the newest).
    """

    def __init__(self, *, history: int = 50, feedback: int = 2_000) -> None:
        self.started = datetime.now(UTC)
        self.latency = LatencyHistogram()
        self.tiers: deque[TierChange] = deque(maxlen=history)
        self.passes: deque[PassRecord] = deque(maxlen=history)
        self.feedback: deque[FeedbackEvent] = deque(maxlen=feedback)

    def retrieval(self, ms: float, tier: Tier, reason: str | None) -> None:
        """Count one retrieval; a tier other than the last one's is a change worth keeping."""
        self.latency.add(ms)
        if not self.tiers or self.tiers[-1].tier is not tier:
            self.tiers.append(TierChange(datetime.now(UTC), tier, reason))

    def lifecycle_pass(self, record: PassRecord) -> None:
        self.passes.append(record)

    def useful(self, item_id: str, helpful: bool, usefulness: float, reason: str | None) -> None:
        self.feedback.append(FeedbackEvent(datetime.now(UTC), item_id, helpful, usefulness, reason))

    def feedback_for(self, item_id: str) -> list[FeedbackEvent]:
        """Feedback on one item since start, oldest first."""
        return [event for event in self.feedback if event.item_id == item_id]
