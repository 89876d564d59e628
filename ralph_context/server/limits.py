"""What keeps one busy client, or fifty, from making every client wait for seconds.

Two cores answer about 50 searches a second; beyond that, requests only queue. Measured
before these limits (issue 19): 50 concurrent clients got p50 2.1 s and p99 8.9 s, every
call served late. Here a request past the limits is refused at once with 429 and a
``Retry-After``, which MCP clients and agents can act on, instead of waiting.

- ``RateLimiter``: a token bucket per client (the HTTP face keys it by session, within
  the caller's token or address).
- ``InFlight``: calls being answered at once, across clients; past the bound, 429.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["InFlight", "RateLimiter"]

# Buckets of clients not seen for this long are dropped (a scan runs now and then).
_FORGET_AFTER = 600.0


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """Requests per second per client, with bursts up to ``burst``.

    Args:
        rate: Sustained requests per second a client may make (``0``: no limit).
        burst: Requests a client may make at once after being idle.
    """

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._buckets: dict[str, _Bucket] = {}
        self._swept = time.monotonic()

    def wait_for(self, client: str) -> float:
        """Take a request from ``client``'s bucket: 0 if it may go now, else the seconds
        until it may (nothing taken)."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        self._sweep(now)
        bucket = self._buckets.get(client)
        if bucket is None:
            bucket = self._buckets[client] = _Bucket(float(self.burst), now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / self.rate

    def _sweep(self, now: float) -> None:
        if now - self._swept < _FORGET_AFTER:
            return
        self._swept = now
        idle = [k for k, b in self._buckets.items() if now - b.updated > _FORGET_AFTER]
        for key in idle:
            del self._buckets[key]


class InFlight:
    """Calls being answered now, at most a limit that follows their latency (beyond it:
    refuse, don't queue).

    On two cores a call's latency is about the calls in flight over the calls answered per
    second (~45 mixed calls/s with three 10k-item namespaces): a fixed bound of 24 let 50
    clients wait 2.6 s at p99. So the limit starts at ``bound`` and is cut by a quarter when
    a call takes longer than ``target`` seconds (once per ``target``: a burst of slow
    answers is one signal, not fifty), and grows back by one per ``limit`` calls answered
    in time, never below ``floor``: the classic additive-increase, multiplicative-decrease
    loop, which settles where answers take about ``target``, whatever the machine.

    Args:
        bound: The most calls ever answered at once.
        target: Seconds a call should take at most; ``None`` keeps the limit at ``bound``.
        floor: The limit never drops below this (a slow call alone must not stop service).
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        bound: int,
        target: float | None = None,
        *,
        floor: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bound = bound
        self.target = target
        self.floor = max(1, min(floor, bound))
        self.limit = float(bound)
        self.active = 0
        self._clock = clock
        self._cut_at = -math.inf

    @property
    def allowed(self) -> int:
        """Calls that may be in flight now."""
        return max(self.floor, int(self.limit))

    def enter(self) -> bool:
        """Count one more call in; False (nothing counted) when ``allowed`` are in flight."""
        if self.active >= self.allowed:
            return False
        self.active += 1
        return True

    def leave(self, seconds: float | None = None) -> None:
        """Count a call out; ``seconds`` it took adjusts the limit."""
        self.active -= 1
        if self.target is None or seconds is None:
            return
        if seconds <= self.target:
            self.limit = min(float(self.bound), self.limit + 1.0 / self.limit)
            return
        now = self._clock()
        if now - self._cut_at >= self.target:
            self._cut_at = now
            self.limit = max(float(self.floor), self.limit * 0.75)


def retry_after(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
