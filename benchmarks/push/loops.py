"""The loop kind: what Ralph 1.x's hook is served, iteration by iteration, in the A/B
harness's loops (``benchmarks/ab``: the real hook, engine and model; the reader agent).

A Ralph push's query is not a question: it is the loop's prompt (task, current step, plan;
its first 120 characters) and the latest output (100), so its evidence sits lower than a
prompt's. Every task of the suite runs once with memory and no gate (the loop's course is the
one a push gave before the gate), and each iteration's served items are kept, an item
answering when it holds an answer the current step needs; an iteration none of whose
served items holds one is a no-answer prompt (the answer is not in memory yet: an earlier
iteration has not found it). A task is a fold group. The prompt gate is not fitted on these:
they are graded with it, to show what it would do to a loop (``bench ab`` measures what that
costs in iterations).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import benchmarks.ab.loop as ab_loop
from benchmarks.ab.agents import ReaderAgent
from benchmarks.ab.suite import Task
from benchmarks.push.asked import Asked, Served
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context_ralph import Handle, attach
from ralph_context_ralph.sources import Served as Retrieval

__all__ = ["KIND", "collect_loops"]

KIND = "loop"
Tick = Callable[[], None]


async def collect_loops(
    tasks: Sequence[Task],
    model: LocalEmbedder,
    workdir: Path,
    tick: Tick,
    *,
    seed: int = 20261122,
    max_iterations: int = 60,
) -> list[Asked]:
    """Every iteration's served items of one run per task, memory on and the gate off."""
    asked: list[Asked] = []
    # run_episode attaches the hook itself: its module's attach records for it meanwhile.
    names = vars(ab_loop)
    original = names["attach"]
    try:
        for index, task in enumerate(tasks):
            names["attach"] = _recording(asked, task)
            await ab_loop.run_episode(
                task,
                ab_loop.MCP,
                seed=seed + index,
                agent=lambda rng: ReaderAgent(rng),
                workdir=workdir / f"t{index}",
                model=model,
                max_iterations=max_iterations,
            )
            tick()
    finally:
        names["attach"] = original
    return asked


def _recording(asked: list[Asked], task: Task) -> Callable[..., Handle]:
    """``attach`` that also records what each iteration's retrieval served."""

    def attached(host: Any, engine: Any, **options: Any) -> Handle:
        gate_off = engine.settings.with_overrides(retrieval={"push_gate": "off"})
        handle = attach(host, engine, settings=gate_off, **options)
        serve = handle._serve

        def recorded(prompt: str) -> Retrieval:
            served = serve(prompt)
            answers = [fact.answer for fact in host.current_adapter.env.needed()]
            if answers:
                items = tuple(
                    Served(
                        round(hit.score, 6),
                        {k: round(v, 6) for k, v in hit.breakdown.items()},
                        any(answer in hit.item.content for answer in answers),
                        hit.item.content_type.value,
                    )
                    for hit in served.items
                )
                answerable = any(item.relevant for item in items)
                query = handle._query(prompt)
                asked.append(Asked(KIND, task.id, task.kind.value, answerable, query, items))
            return served

        handle._serve = recorded  # type: ignore[method-assign]
        return handle

    return attached
