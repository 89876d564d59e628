"""``bench latency``'s files: results.json, results.md (its table) and latency.png.

A phase that failed (``phases.Phases``) shows as ``—`` in the table, no bar in the plot,
and a line naming it and its error under the table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.latency.phases import value
from benchmarks.latency.targets import TARGETS

__all__ = ["NO_PLOT", "markdown", "write_outputs"]

NO_PLOT = (
    "latency.png not drawn: matplotlib is missing (pip install 'ralph-context[bench]'); "
    "results.json and results.md are written"
)


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| items | floor p50 | engine p50/p99 | stdio p50/p99 | http p50/p99 | "
        "8 http clients p50/p99 | hook p50/p99 | hook in loop p50/p99 (store p50/p99) "
        "| store MB | RSS MB | server RSS MB | CPU ms/search |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in results["runs"]:

        def pair(*path: str, run: dict[str, Any] = run) -> str:
            face = value(run, *path)
            return "—" if face is None else f"{face['p50_ms']:.1f} / {face['p99_ms']:.1f}"

        def one(*path: str, run: dict[str, Any] = run) -> str:
            found = value(run, *path)
            return "—" if found is None else str(found)

        floor_p50 = value(run, "floor", "sum", "p50_ms")
        lines.append(
            f"| {run['items']:,} | {'—' if floor_p50 is None else f'{floor_p50:.1f}'} | "
            f"{pair('engine')} | {pair('stdio')} | {pair('http')} | {pair('http8')} | "
            f"{pair('hook')} | {pair('hook_loop', 'retrieval')} ({pair('hook_loop', 'store')}) | "
            f"{one('store_mb')} | {one('rss_mb')} | {one('server_rss_mb')} | "
            f"{one('engine', 'cpu_ms')} |"
        )
    ingest_rates = results["ingest"]
    lines.append("")
    if ingest_rates:
        lines.append(
            f"MCP ingest ({ingest_rates['texts']} LoCoMo turns): store_context "
            f"{ingest_rates['mcp_single_items_per_s']}/s, store_contexts "
            f"{ingest_rates['mcp_batch_items_per_s']}/s, the model alone "
            f"{ingest_rates['raw_items_per_s']}/s (batch = {ingest_rates['batch_vs_raw']:.0%})."
        )
    for where, error in results.get("failed", {}).items():
        lines.append(f"**Failed**, {where}: {error} (its figures are missing).")
    lines += [
        "",
        "| summary key | measured | target |",
        "|---|---:|---:|",
    ]
    for key, measured in results["summary"].items():
        lines.append(
            f"| `{key}` | {measured if measured is not None else '—'} | {TARGETS.get(key, '')} |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    """results.json and results.md first, then latency.png when matplotlib is installed."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(results), encoding="utf-8")
    try:
        import matplotlib
    except ImportError:
        print(NO_PLOT, file=sys.stderr)
        return paths
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    faces = ["floor", "engine", "stdio", "http", "http8", "hook", "hook_loop"]
    fig, axis = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / max(1, len(results["runs"]))
    where = {"floor": ("floor", "sum"), "hook_loop": ("hook_loop", "retrieval")}
    for n, run in enumerate(results["runs"]):
        found = [value(run, *where.get(face, (face,)), "p99_ms") for face in faces]
        values = [np.nan if v is None else v for v in found]  # a failed phase: no bar
        x = np.arange(len(faces)) + n * width
        axis.bar(x, values, width, label=f"{run['items']:,} items")
    axis.set_xticks(np.arange(len(faces)) + width * (len(results["runs"]) - 1) / 2, faces)
    axis.set_ylabel("p99 ms")
    axis.set_title("p99 latency per face (floor: raw embedding + vector + full-text)")
    axis.legend()
    fig.tight_layout()
    paths.append(out / "latency.png")
    fig.savefig(paths[2], dpi=110)
    plt.close(fig)
    return paths
