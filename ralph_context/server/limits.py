"""What keeps one busy client, or fifty, from making every client wait for seconds.

Two cores answer about 50 searches a second; beyond that, requests only queue. Measured
before these limits (issue 19): 50 concurrent clients got p50 2.1 s and p99 8.9 s, every
call served late. Here a request past the limits is refused at once with 429 and a
``Retry-After``, which MCP clients and agents can act on, instead of waiting.

- ``RateLimiter``: a token bucket per client (the HTTP face keys it by session, within
  the caller's token or address).
- ``InFlight``: calls being answered at once, across clients; past the bound a call waits
  a moment for a slot, then 429 with a ``Retry-After`` spread at random. The HTTP face
  keeps one for reads and one for writes, so reads are never refused for writes' sake.
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio

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
    """Calls being answered now, at most a limit that follows their latency; a call past
    the limit waits its turn a short while (``queue_wait``), then is refused.

    On two cores a call's latency is about the calls in flight over the calls answered per
    second, so the limit starts at ``bound`` and moves once per window of ``target``
    seconds on the median time the window's calls took: cut by a quarter when it passed
    ``target``, raised by one when it did not, never below ``floor`` nor above ``bound``.
    Measured before (issue 62), with every slow call cutting the limit and a refusal
    waiting for none: one slow write or a busy machine kept the limit at its floor, the
    refused came back together each second (``Retry-After: 1``) to find it full again,
    and of 50 clients 89-98% of calls were refused, 5 answered a second against the 37 one
    client gets alone. Waiting for a slot keeps the slots busy between arrivals; a call is
    refused at once only when the queue ahead of it would outlast ``queue_wait``.

    Args:
        bound: The most calls ever answered at once.
        target: Seconds a call should take at most; ``None`` keeps the limit at ``bound``.
        floor: The limit never drops below this (a slow call alone must not stop service).
        queue_wait: Seconds a call past the limit may wait for a slot (0: refused at once).
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        bound: int,
        target: float | None = None,
        *,
        floor: int = 2,
        queue_wait: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bound = bound
        self.target = target
        self.floor = max(1, min(floor, bound))
        self.queue_wait = queue_wait
        self.limit = float(bound)
        self.active = 0
        self._clock = clock
        self._waiting: deque[anyio.Event] = deque()
        self._window: list[float] = []
        self._window_started = clock()
        # Calls answered per second, over the last windows (how fast the queue moves),
        # and the last window's median seconds.
        self._rate = 0.0
        self._median = 0.0

    @property
    def allowed(self) -> int:
        """Calls that may be in flight now."""
        return max(self.floor, int(self.limit))

    @property
    def wait_now(self) -> float:
        """How long a call may wait for a slot now: ``queue_wait``, less what the last
        window's calls took beyond ``target`` (a call admitted late on a slow machine
        would be served late too: better refused, to come back later)."""
        if self.target is None:
            return self.queue_wait
        return max(0.0, min(self.queue_wait, self.queue_wait + self.target - self._median))

    @property
    def queued(self) -> int:
        """Calls waiting for a slot."""
        return len(self._waiting)

    def enter(self) -> bool:
        """Count one more call in; False (nothing counted) when ``allowed`` are in flight
        or others wait already."""
        if self.active >= self.allowed or self._waiting:
            return False
        self.active += 1
        return True

    async def admit(self) -> bool:
        """Count one more call in, waiting up to ``queue_wait`` for a slot (in arrival
        order); False (nothing counted) when none came, or the queue ahead would not
        move in time."""
        if self.enter():
            return True
        if self.queued >= max(self.allowed, self._rate * self.queue_wait):
            return False  # the queue ahead would not drain in time: refused at once
        turn = anyio.Event()
        self._waiting.append(turn)
        admitted = False
        try:
            with anyio.move_on_after(self.wait_now):
                await turn.wait()
            admitted = turn.is_set()
            return admitted
        finally:
            if admitted:
                pass
            elif turn.is_set():
                self._hand_on()  # handed a slot while being cancelled: pass it on
            else:
                self._waiting.remove(turn)

    def leave(self, seconds: float | None = None) -> None:
        """Count a call out, handing its slot to the longest waiting call if the limit
        allows; ``seconds`` it took (from its admission) adjusts the limit."""
        if self.target is not None and seconds is not None:
            self._observe(seconds)
        self._hand_on()

    def _hand_on(self) -> None:
        if self._waiting and self.active <= self.allowed:
            self._waiting.popleft().set()  # the slot passes on: active stays
            return
        self.active -= 1

    def _observe(self, seconds: float) -> None:
        assert self.target is not None
        self._window.append(seconds)
        now = self._clock()
        span = now - self._window_started
        if span < self.target or len(self._window) < 3:
            return
        middle = self._median = sorted(self._window)[len(self._window) // 2]
        self._rate = 0.5 * self._rate + 0.5 * len(self._window) / span
        if middle > self.target:
            self.limit = max(float(self.floor), self.limit * 0.75)
        else:
            self.limit = min(float(self.bound), self.limit + 1.0)
        self._window, self._window_started = [], now


def retry_after(seconds: float, *, spread: int = 0) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1, plus up to ``spread`` seconds
    at random, so clients refused together do not come back together."""
    return str(max(1, math.ceil(seconds)) + random.randint(0, spread))
