"""The A/B results as files: ``results.json``, ``results.md`` and two plots.

The markdown puts what memory costs beside what it saves: per kind, the iterations saved and
the tokens it injected (per iteration, per task), the precision of what it injected, and
iterations saved per 1,000 injected tokens; then, per hazard kind, what the tasks holding
one cost with memory against without.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.ab.loop import BASELINE, MCP
from benchmarks.ab.run import LATENCY_P99_MS

__all__ = ["markdown", "plot", "write_outputs"]


def markdown(results: dict[str, Any]) -> str:
    plan = results["plan"]
    lines = [
        f"A/B on suite `{results['suite']}`: {results['runs_per_task']} runs per task, agent "
        f"`{plan['agent']}`, seed {plan['seed']}, memory budget "
        f"{results['context_token_budget']} tokens.",
        "",
        "| kind | complexity | baseline iterations (95% CI) | mcp_enabled iterations (95% CI) "
        "| reduction | p (Mann-Whitney) | effect (r) | success b / m | error recovery b / m "
        "| criterion met |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for kind, row in results["kinds"].items():
        base, memory = row[BASELINE], row[MCP]
        lines.append(
            f"| {kind} | {row['complexity']} | {_mean(base)} | {_mean(memory)} "
            f"| {row['reduction']:+.1%} | {row['p_value']:.3g} | {row['effect_size']:+.2f} "
            f"| {base['success_rate']:.0%} / {memory['success_rate']:.0%} "
            f"| {_rate(base['error_recovery_rate'])} / {_rate(memory['error_recovery_rate'])} "
            f"| {'yes' if row['met'] else 'no'} |"
        )
    lines += [
        "",
        "What memory cost (mcp_enabled): tokens injected, the precision of what was injected "
        "(items holding an answer the step needed / items injected), iterations it left "
        "silent, and iterations saved per 1,000 injected tokens.",
        "",
        "| kind | iterations saved / task | injected tokens / iteration | injected tokens / task "
        "| precision | silent iterations | window use | saved / 1,000 tokens |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for kind, row in results["kinds"].items():
        memory = row[MCP]
        lines.append(
            f"| {kind} | {row['iterations_saved']:+.2f} "
            f"| {_tokens(memory['injected_tokens_mean'])} "
            f"| {_tokens(memory['injected_tokens_per_task'])} | {_rate(memory['precision'])} "
            f"| {_rate(memory['silent_iterations'])} | {_rate(memory['context_utilization'])} "
            f"| {_number(row['saved_per_1k_tokens'])} |"
        )
    if results.get("hazards"):
        lines += [
            "",
            "Where memory can hurt: the tasks holding a hazard of each kind (the earlier "
            "session left it in memory), with and without memory.",
            "",
            "| hazard | tasks | baseline iterations (95% CI) | mcp_enabled iterations (95% CI) "
            "| extra iterations with memory | p | pushed as fact (share of iterations) "
            "| precision | injected tokens / task | criterion met |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for kind, row in results["hazards"].items():
            memory = row[MCP]
            lines.append(
                f"| {kind} | {len(row['tasks'])} | {_mean(row[BASELINE])} | {_mean(memory)} "
                f"| {row['extra_iterations']:+.2f} | {row['p_value']:.3g} "
                f"| {row['pushed_as_fact']:.0%} | {_rate(memory['precision'])} "
                f"| {_tokens(memory['injected_tokens_per_task'])} "
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


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


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
