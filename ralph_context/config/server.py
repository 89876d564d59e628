"""``server:``: how the MCP server is reached, who may call it, and how much it takes on."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field

from ralph_context.config.section import Section

__all__ = ["ServerSettings"]


class ServerSettings(Section):
    """How the MCP server is reached."""

    transport: Literal["stdio", "sse", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    auto_start: bool = True
    # Bearer tokens for HTTP (see ralph_context.server.tokens), relative to the project
    # root; RALPH_CONTEXT_TOKEN adds one. No file and no variable: a bind beyond loopback
    # is refused. `ralph-context token new` writes here.
    token_file: Path = Path(".agent/server.tokens")
    # The store's owner token (`owner.token` in the store's folder, mode 0600), created at
    # a server's first start and required over HTTP beside the tokens above: another local
    # user can reach a loopback port but cannot read the file. The project's hooks, CLI,
    # bridge and Ralph's hooks read it themselves. false: loopback is open to every local
    # user when no token is configured (as before 0.x).
    owner_token: bool = True
    # Host and Origin headers accepted beyond loopback and this machine's own names
    # ("name:*" allows any port): DNS-rebinding protection stays on for every bind.
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    # Open MCP sessions at most, and how long an idle one is kept.
    max_sessions: int = Field(default=200, ge=1)
    session_idle_minutes: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    # Requests per second per client session, with bursts; 0: no limit. (One client
    # storing items one by one makes ~50 calls/s here.)
    rate_limit_per_second: float = Field(default=100.0, ge=0, allow_inf_nan=False)
    rate_limit_burst: int = Field(default=200, ge=1)
    # Calls answered at once; past this, 429 at once rather than a queue of seconds. None:
    # 6 per core (two cores answer ~50 searches a second; with 24 in flight, 50 clients got
    # p99 899 ms and 11 calls over 1 s, with 12: p99 543 ms and one).
    max_in_flight: int | None = Field(default=None, ge=1)

    @property
    def in_flight_bound(self) -> int:
        """``max_in_flight``, or 6 per core of this machine."""
        return self.max_in_flight or 6 * (os.cpu_count() or 2)

    # A call slower than this lowers how many are answered at once (it grows back while
    # calls are fast), so a crowd is told 429 instead of all waiting; 0: fixed.
    target_latency_ms: float = Field(default=300.0, ge=0, le=60_000, allow_inf_nan=False)
    # ... but never below this (capped at max_in_flight). Measured with 3 namespaces of 10k:
    # at 2, 8 clients calling back to back had 10 of 3,126 calls refused (their slow calls
    # were writes waiting for maintenance); at 8, none, but with 8 searches at once the
    # low-priority maintenance starved and writes waited up to 3.9 s (50 clients: 2.4 s).
    min_in_flight: int = Field(default=2, ge=1)
    # How long a call past the limit waits for a slot before it is refused with 429. A
    # search takes up to ~500 ms more once admitted under a crowd: measured with 50 clients
    # on 2 cores (nothing else running), 400 let 6 of 892 served reads pass a second
    # (longest 1.18 s), 250 none (longest 0.99 s), 200 none (longest 0.78 s) with goodput
    # still 1.33x one sequential client's.
    queue_wait_ms: float = Field(default=200.0, ge=0, le=60_000, allow_inf_nan=False)
    # A refusal's Retry-After is 1 s plus up to this many seconds at random, so a crowd
    # refused together comes back spread out (all at 1 s found the limit full again).
    retry_spread_seconds: int = Field(default=2, ge=0, le=60)
    # `bench ab`'s results.json, relative to the project root: the console's Iterations page
    # plots its iterations per task kind when the file is there.
    ab_results: Path = Path("benchmarks/ab/results/results.json")
    # Namespaces one server opens at most (each keeps its tables and caches in memory).
    max_namespaces: int = Field(default=32, ge=1)
