"""The A/B harness: every task of a suite, ``runs_per_task`` times, with and without memory.

Runs are scheduled in a random order (seeded) so drift in machine load does not favour a
variant; a task's run ``r`` uses the same seed in both variants (paired noise and guesses).
Writes ``results.json``, ``results.md``, ``iterations.png`` and ``latency.png``.

Success criteria (the seed's): at least 15% fewer iterations on medium and high complexity
kinds with p < 0.05; no regression on simple tasks (memory not significantly worse); memory's
retrieval p99 under 100 ms. And memory's own: the tasks with a hazard of each kind (a stale
fix, an irrelevant skill, a misleading note) take no more iterations with memory than
without, on average. A run that hits ``max_iterations`` counts that many iterations.

What memory costs, beside what it saves: the tokens it injected per iteration and per task,
the precision of what it injected (items holding an answer the current step needed, over
items injected), the iterations it left silent, and iterations saved per 1,000 injected
tokens (iterations saved per task over injected tokens per task, in thousands).

Usage: ``ralph-context bench ab [--quick] [--suite FILE] [--out DIR]``
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.ab.agents import Agent, OpenAIAgent, ReaderAgent
from benchmarks.ab.loop import BASELINE, CONTEXT_TOKENS, MCP, VARIANTS, Episode, run_episode
from benchmarks.ab.stats import mann_whitney, mean_ci
from benchmarks.ab.suite import KINDS, HazardKind, Kind, Suite, Task
from ralph_context import Settings
from ralph_context.embeddings.local import load_embedder

__all__ = ["DEFAULT_SUITE", "Plan", "evaluate", "summarize"]

DEFAULT_SUITE = Path(__file__).with_name("suites") / "default.yaml"
TARGET_REDUCTION = 0.15
ALPHA = 0.05
LATENCY_P99_MS = 100.0

Tick = Callable[[], None]


@dataclass(frozen=True)
class Plan:
    """What to run: ``quick`` keeps the first task of each kind and 2 runs per task."""

    runs_per_task: int = 10
    seed: int = 20261122
    max_iterations: int = 60
    quick: bool = False
    agent: str = "reader"
    guess_rate: float = 0.1
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None

    def tasks(self, suite: Suite) -> list[Task]:
        """Every task; quick: the first of each kind and the first with each hazard kind."""
        if not self.quick:
            return list(suite.tasks)
        chosen = [tasks[0] for tasks in suite.by_kind().values() if tasks]
        for kind in HazardKind:
            first = next((t for t in suite.tasks if kind in _hazard_kinds(t)), None)
            if first is not None and first not in chosen:
                chosen.append(first)
        return chosen

    def runs(self) -> int:
        return 2 if self.quick else self.runs_per_task


def schedule(tasks: Sequence[Task], plan: Plan) -> list[tuple[Task, int, str, int]]:
    """Every (task, run, variant, seed), shuffled with the plan's seed."""
    runs = [
        (task, run, variant, random.Random(f"{plan.seed}:{task.id}:{run}").randrange(2**31))
        for task in tasks
        for run in range(plan.runs())
        for variant in VARIANTS
    ]
    random.Random(plan.seed).shuffle(runs)
    return runs


async def evaluate(
    suite: Suite,
    plan: Plan,
    *,
    workdir: Path | None = None,
    progress: Callable[[int], Tick] | None = None,
) -> dict[str, Any]:
    """Run the plan; ``progress(total)`` returns a per-episode tick."""
    runs = schedule(plan.tasks(suite), plan)
    tick = progress(len(runs)) if progress is not None else (lambda: None)
    model = load_embedder(Settings.load(None).embeddings)
    openai = (
        OpenAIAgent(plan.base_url, plan.model, plan.api_key)
        if plan.agent == "openai" and plan.base_url and plan.model
        else None
    )

    def agent(rng: random.Random) -> Agent:
        return openai if openai is not None else ReaderAgent(rng, plan.guess_rate)

    episodes: list[Episode] = []
    try:
        with tempfile.TemporaryDirectory(prefix="ralph-ab-", dir=workdir) as tmp:
            for index, (task, _, variant, seed) in enumerate(runs):
                episodes.append(
                    await run_episode(
                        task,
                        variant,
                        seed=seed,
                        agent=agent,
                        workdir=Path(tmp) / f"e{index}",
                        model=model,
                        max_iterations=plan.max_iterations,
                    )
                )
                tick()
    finally:
        if openai is not None:
            await openai.aclose()
    return summarize(suite, plan, episodes)


def summarize(suite: Suite, plan: Plan, episodes: Sequence[Episode]) -> dict[str, Any]:
    """Per kind: both variants' metrics, the reduction, Mann-Whitney p and effect size."""
    kinds: dict[str, Any] = {}
    for kind in Kind:
        mine = [e for e in episodes if e.kind == kind.value]
        if not mine:
            continue
        base = [float(e.iterations) for e in mine if e.variant == BASELINE]
        memory = [float(e.iterations) for e in mine if e.variant == MCP]
        test = mann_whitney(base, memory)
        reduction = 1 - float(np.mean(memory)) / float(np.mean(base))
        complexity = KINDS[kind]
        memory_row = _variant([e for e in mine if e.variant == MCP])
        if complexity == "low":
            met = not (test.p_value < ALPHA and reduction < 0)
            criterion = "no regression"
        else:
            met = reduction >= TARGET_REDUCTION and test.p_value < ALPHA
            criterion = f">= {TARGET_REDUCTION:.0%} fewer iterations, p < {ALPHA}"
        kinds[kind.value] = {
            "complexity": complexity,
            BASELINE: _variant([e for e in mine if e.variant == BASELINE]),
            MCP: memory_row,
            "reduction": round(reduction, 4),
            **_saved(base, memory, memory_row),
            "p_value": test.p_value,
            "effect_size": round(test.effect_size, 4),
            "u": test.u_a,
            "criterion": criterion,
            "met": met,
        }
    hazards = _hazards(suite, episodes)
    latencies = [ms for e in episodes for ms in e.retrieval_ms]
    p99 = float(np.percentile(latencies, 99)) if latencies else None
    criteria = {
        "medium_and_high_kinds": all(k["met"] for k in kinds.values() if k["complexity"] != "low"),
        "simple_no_regression": all(k["met"] for k in kinds.values() if k["complexity"] == "low"),
        "latency_p99_under_100ms": p99 is not None and p99 < LATENCY_P99_MS,
    }
    if hazards:
        criteria["hazards_no_more_iterations"] = all(h["met"] for h in hazards.values())
    return {
        "suite": suite.name,
        "plan": asdict(plan) | {"api_key": None},
        "runs_per_task": plan.runs(),
        "context_token_budget": CONTEXT_TOKENS,
        "kinds": kinds,
        "hazards": hazards,
        "latency_ms": {
            "p50": round(float(np.percentile(latencies, 50)), 2) if latencies else None,
            "p99": round(p99, 2) if p99 is not None else None,
            "samples": len(latencies),
        },
        "criteria": criteria,
        "episodes": [_episode_row(e) for e in episodes],
        # Per-iteration samples for the histogram; not written to results.json.
        "_latencies": latencies,
    }


def _hazard_kinds(task: Task) -> set[HazardKind]:
    return {h.kind for h in task.hazards}


def _hazards(suite: Suite, episodes: Sequence[Episode]) -> dict[str, Any]:
    """Per hazard kind, over the tasks holding one: both variants, the iterations memory
    added (negative: saved), how often the hazard was pushed as fact, and the criterion."""
    rows: dict[str, Any] = {}
    for kind in HazardKind:
        tasks = {t.id for t in suite.tasks if kind in _hazard_kinds(t)}
        mine = [e for e in episodes if e.task in tasks]
        base = [e for e in mine if e.variant == BASELINE]
        memory = [e for e in mine if e.variant == MCP]
        if not base or not memory:
            continue
        extra = float(np.mean([e.iterations for e in memory])) - float(
            np.mean([e.iterations for e in base])
        )
        measured = sum(len(e.injected_tokens) for e in memory)
        rows[kind.value] = {
            "tasks": sorted(tasks),
            BASELINE: _variant(base),
            MCP: _variant(memory),
            "extra_iterations": round(extra, 3),
            "p_value": mann_whitney(
                [float(e.iterations) for e in base], [float(e.iterations) for e in memory]
            ).p_value,
            "pushed_as_fact": round(sum(e.hazard_pushed for e in memory) / measured, 4)
            if measured
            else 0.0,
            "criterion": "no more iterations with memory (mean)",
            "met": extra <= 0,
        }
    return rows


def _saved(base: Sequence[float], memory: Sequence[float], row: dict[str, Any]) -> dict[str, Any]:
    """Iterations saved per task, and per 1,000 tokens memory injected into a task."""
    saved = float(np.mean(base)) - float(np.mean(memory))
    per_task = row["injected_tokens_per_task"]
    return {
        "iterations_saved": round(saved, 3),
        "saved_per_1k_tokens": round(saved / (per_task / 1000), 3) if per_task else None,
    }


def _episode_row(episode: Episode) -> dict[str, Any]:
    row = asdict(episode)
    for name in ("retrieval_ms", "relevance", "utilization", "injected_tokens"):
        del row[name]
    for name in ("injected_items", "useful_items"):
        row[name] = sum(row[name])
    row["injected_tokens"] = sum(episode.injected_tokens)
    return row


def _variant(episodes: Sequence[Episode]) -> dict[str, Any]:
    iterations = [float(e.iterations) for e in episodes]
    mean, low, high = mean_ci(iterations)
    errors = sum(e.errors for e in episodes)
    relevance = [r for e in episodes for r in e.relevance]
    utilization = [u for e in episodes for u in e.utilization]
    injected = [t for e in episodes for t in e.injected_tokens]
    items = sum(sum(e.injected_items) for e in episodes)
    useful = sum(sum(e.useful_items) for e in episodes)
    silent = sum(n == 0 for e in episodes for n in e.injected_items)
    return {
        "runs": len(episodes),
        "iterations_mean": round(mean, 3),
        "iterations_ci95": [round(low, 3), round(high, 3)],
        "success_rate": round(sum(e.success for e in episodes) / len(episodes), 4),
        "errors_mean": round(errors / len(episodes), 3),
        "error_recovery_rate": (
            round(sum(e.recovered for e in episodes) / errors, 4) if errors else None
        ),
        "context_relevance": round(float(np.mean(relevance)), 4) if relevance else None,
        "context_utilization": round(float(np.mean(utilization)), 4) if utilization else None,
        "injected_tokens_mean": round(float(np.mean(injected)), 1) if injected else None,
        "injected_tokens_per_task": (
            round(float(np.mean([sum(e.injected_tokens) for e in episodes])), 1)
            if injected
            else None
        ),
        "precision": round(useful / items, 4) if items else None,
        "silent_iterations": round(silent / len(injected), 4) if injected else None,
    }
