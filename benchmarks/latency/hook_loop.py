"""The Ralph hook's cost per iteration, on a large store, as a loop pays it.

The real in-process hook (``ralph_context_ralph.attach``) on Ralph 1.2.3's own
``ContextManager``, driven the way Ralph's loop drives it (the A/B harness's host): each
iteration asks ``get_prompt()`` (the hook's retrieval, timed), then the adapter runs and the
hook stores its result (timed apart). Two modes:

- ``retrieval``: the lifecycle off, results not stored: the hook's retrieval alone;
- ``loop``: every iteration stores its result (an output, every fifth an error), the
  lifecycle on at its defaults. On a store bulk-loaded over many earlier iterations, the
  first pass archives most of it, under load, while the loop goes on.

``agent_ms`` is the agent's own time per iteration (a sleep): real agents take seconds, and
the engine's background work is meant to use that time, not the loop's.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
from ralph_orchestrator.adapters.base import ToolResponse
from ralph_orchestrator.context import ContextManager

from benchmarks.settings import store_settings
from ralph_context import Engine
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context_ralph import attach

__all__ = ["run_hook"]

TASK = (
    "Keep the personal assistant's memory of the user's conversations useful: answer "
    "questions about what people said, planned and did, with dates.\n\n"
    "Steps: read the notes, find what was said about the question, answer with the date."
)


class _Adapter:
    """An agent that answers with a real conversation turn (every fifth call fails)."""

    name = "bench-agent"

    def __init__(self, turns: list[str], agent_ms: float, seed: int) -> None:
        self.turns = turns
        self.agent_ms = agent_ms
        self.rng = random.Random(seed)
        self.calls = 0
        self.last_ms = 0.0

    async def aexecute(self, prompt: str, **_: Any) -> ToolResponse:
        started = time.perf_counter()
        self.calls += 1
        await anyio.sleep(self.agent_ms / 1000)
        self.last_ms = (time.perf_counter() - started) * 1000
        turn = self.rng.choice(self.turns)
        if self.calls % 5 == 0:
            return ToolResponse(success=False, output="", error=f"AssertionError: {turn[:200]}")
        return ToolResponse(success=True, output=turn)


async def run_hook(
    store: Path,
    embedder: LocalEmbedder,
    turns: list[str],
    *,
    iterations: int,
    mode: str,
    agent_ms: float,
    workdir: Path,
    first_iteration: int,
) -> dict[str, list[float]]:
    """Drive ``iterations`` of the loop on ``store``; returns the per-iteration timings in
    ms: ``retrieval`` (get_prompt) and ``store`` (the hook's recording of the result)."""
    workdir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - before the loop starts
    prompt_file = workdir / "PROMPT.md"
    prompt_file.write_text(TASK, encoding="utf-8")
    manager = ContextManager(prompt_file, cache_dir=workdir / ".agent" / "cache")
    clock = SimpleNamespace(iterations=first_iteration)
    adapter = _Adapter(turns, agent_ms, seed=first_iteration)
    host = SimpleNamespace(
        context_manager=manager,
        adapters={adapter.name: adapter},
        current_adapter=adapter,
        metrics=clock,
        prompt_file=prompt_file,
    )
    settings = store_settings(
        store,
        skillbook={"enabled": False},
        lifecycle={"auto_run": mode == "loop"},
    )
    handle = attach(host, Engine(settings, model_loader=lambda _s: embedder), task="bench")
    timings: dict[str, list[float]] = {"retrieval": [], "store": []}
    try:
        for n in range(iterations):
            clock.iterations = first_iteration + n
            started = time.perf_counter()
            prompt = manager.get_prompt()
            timings["retrieval"].append((time.perf_counter() - started) * 1000)
            if mode == "loop":
                # The hook wrapped aexecute: the agent's call, then the hook stores the result.
                started = time.perf_counter()
                await host.current_adapter.aexecute(prompt)
                total = (time.perf_counter() - started) * 1000
                timings["store"].append(total - adapter.last_ms)
            else:
                await anyio.sleep(adapter.agent_ms / 1000)
    finally:
        handle.detach()
    return timings
