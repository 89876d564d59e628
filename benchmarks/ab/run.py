"""The A/B harness: every task of a suite, ``runs_per_task`` times, with and without memory.

Runs are scheduled in a random order (seeded) so drift in machine load does not favour a
variant; a task's run ``r`` uses the same seed in both variants (paired noise and guesses).
Writes ``results.json``, ``results.md``, ``iterations.png`` and ``latency.png``.

Success criteria (the seed's): at least 15% fewer iterations on medium and high complexity
kinds with p < 0.05; no regression on simple tasks (memory not significantly worse); memory's
retrieval p99 under 100 ms. A run that hits ``max_iterations`` counts that many iterations.

Usage: ``ralph-context bench ab [--quick] [--suite FILE] [--out DIR]``
"""

from __future__ import annotations

import json
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
from benchmarks.ab.suite import KINDS, Kind, Suite, Task
from ralph_context import Settings
from ralph_context.embeddings.local import load_embedder

__all__ = ["DEFAULT_SUITE", "Plan", "evaluate", "markdown", "plot", "summarize", "write_outputs"]

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
        if not self.quick:
            return list(suite.tasks)
        return [tasks[0] for tasks in suite.by_kind().values() if tasks]

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
        if complexity == "low":
            met = not (test.p_value < ALPHA and reduction < 0)
            criterion = "no regression"
        else:
            met = reduction >= TARGET_REDUCTION and test.p_value < ALPHA
            criterion = f">= {TARGET_REDUCTION:.0%} fewer iterations, p < {ALPHA}"
        kinds[kind.value] = {
            "complexity": complexity,
            BASELINE: _variant([e for e in mine if e.variant == BASELINE]),
            MCP: _variant([e for e in mine if e.variant == MCP]),
            "reduction": round(reduction, 4),
            "p_value": test.p_value,
            "effect_size": round(test.effect_size, 4),
            "u": test.u_a,
            "criterion": criterion,
            "met": met,
        }
    latencies = [ms for e in episodes for ms in e.retrieval_ms]
    p99 = float(np.percentile(latencies, 99)) if latencies else None
    return {
        "suite": suite.name,
        "plan": asdict(plan) | {"api_key": None},
        "runs_per_task": plan.runs(),
        "context_token_budget": CONTEXT_TOKENS,
        "kinds": kinds,
        "latency_ms": {
            "p50": round(float(np.percentile(latencies, 50)), 2) if latencies else None,
            "p99": round(p99, 2) if p99 is not None else None,
            "samples": len(latencies),
        },
        "criteria": {
            "medium_and_high_kinds": all(
                k["met"] for k in kinds.values() if k["complexity"] != "low"
            ),
            "simple_no_regression": all(
                k["met"] for k in kinds.values() if k["complexity"] == "low"
            ),
            "latency_p99_under_100ms": p99 is not None and p99 < LATENCY_P99_MS,
        },
        "episodes": [_episode_row(e) for e in episodes],
        # Per-iteration samples for the histogram; not written to results.json.
        "_latencies": latencies,
    }


def _episode_row(episode: Episode) -> dict[str, Any]:
    row = asdict(episode)
    for name in ("retrieval_ms", "relevance", "utilization", "injected_tokens"):
        del row[name]
    return row


def _variant(episodes: Sequence[Episode]) -> dict[str, Any]:
    iterations = [float(e.iterations) for e in episodes]
    mean, low, high = mean_ci(iterations)
    errors = sum(e.errors for e in episodes)
    relevance = [r for e in episodes for r in e.relevance]
    utilization = [u for e in episodes for u in e.utilization]
    injected = [t for e in episodes for t in e.injected_tokens]
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
    }


def markdown(results: dict[str, Any]) -> str:
    plan = results["plan"]
    lines = [
        f"A/B on suite `{results['suite']}`: {results['runs_per_task']} runs per task, agent "
        f"`{plan['agent']}`, seed {plan['seed']}, memory budget "
        f"{results['context_token_budget']} tokens.",
        "",
        "| kind | complexity | baseline iterations (95% CI) | mcp_enabled iterations (95% CI) "
        "| reduction | p (Mann-Whitney) | effect (r) | success b / m | error recovery b / m "
        "| context relevance | injected tokens / iteration | window use | criterion met |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for kind, row in results["kinds"].items():
        base, memory = row[BASELINE], row[MCP]
        lines.append(
            f"| {kind} | {row['complexity']} | {_mean(base)} | {_mean(memory)} "
            f"| {row['reduction']:+.1%} | {row['p_value']:.3g} | {row['effect_size']:+.2f} "
            f"| {base['success_rate']:.0%} / {memory['success_rate']:.0%} "
            f"| {_rate(base['error_recovery_rate'])} / {_rate(memory['error_recovery_rate'])} "
            f"| {_rate(memory['context_relevance'])} | {_tokens(memory['injected_tokens_mean'])} "
            f"| {_rate(memory['context_utilization'])} "
            f"| {'yes' if row['met'] else 'no'} |"
        )
    latency = results["latency_ms"]
    criteria = results["criteria"]
    lines += [
        "",
        f"Retrieval latency (the hook's get_prompt, mcp_enabled): p50 {latency['p50']} ms, "
        f"p99 {latency['p99']} ms over {latency['samples']} iterations.",
        "",
        "Criteria: "
        + ", ".join(f"{name} {'met' if ok else 'NOT met'}" for name, ok in criteria.items()),
    ]
    return "\n".join(lines) + "\n"


def _mean(variant: dict[str, Any]) -> str:
    low, high = variant["iterations_ci95"]
    return f"{variant['iterations_mean']:.2f} ({low:.2f}-{high:.2f})"


def _tokens(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def plot(results: dict[str, Any], out: Path) -> list[Path]:
    """Iterations per kind and variant (95% CI bars), and the retrieval latency histogram."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = list(results["kinds"])
    x = np.arange(len(kinds))
    fig, axis = plt.subplots(figsize=(10, 4.8))
    for offset, variant in ((-0.2, BASELINE), (0.2, MCP)):
        rows = [results["kinds"][k][variant] for k in kinds]
        means = np.array([r["iterations_mean"] for r in rows])
        low = means - np.array([r["iterations_ci95"][0] for r in rows])
        high = np.array([r["iterations_ci95"][1] for r in rows]) - means
        axis.bar(x + offset, means, 0.4, yerr=[low, high], capsize=4, label=variant)
    axis.set_xticks(x, [k.replace("_", "\n") for k in kinds])
    axis.set_ylabel("iterations to finish (mean, 95% CI)")
    axis.set_title(f"A/B: iterations per task kind (suite {results['suite']})")
    axis.legend()
    fig.tight_layout()
    iterations = out / "iterations.png"
    fig.savefig(iterations, dpi=110)
    plt.close(fig)
    fig, axis = plt.subplots(figsize=(7, 4))
    axis.hist(results["_latencies"], bins=40, color="#27a")
    axis.axvline(LATENCY_P99_MS, ls="--", c="r", label="p99 goal 100 ms")
    axis.set_xlabel("ms per iteration (retrieval + injection)")
    axis.set_ylabel("iterations")
    axis.set_title("mcp_enabled retrieval latency")
    axis.legend()
    fig.tight_layout()
    latency = out / "latency.png"
    fig.savefig(latency, dpi=110)
    plt.close(fig)
    return [iterations, latency]


def write_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    saved = {k: v for k, v in results.items() if not k.startswith("_")}
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(saved, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(results), encoding="utf-8")
    return paths + plot(results, out)
