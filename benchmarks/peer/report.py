"""``bench peer``'s outputs: ``results.json`` and ``results.md`` (the table it prints)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.retrieval.locomo import CATEGORIES

__all__ = ["markdown", "write_outputs"]


def _first_second(side: dict[str, Any]) -> str:
    latency = side["latency_ms"]
    return " / ".join(
        "-" if latency[key] is None else f"{latency[key]:.1f}"
        for key in ("p50_asked_first", "p50_asked_second")
    )


def _category(category: int) -> Callable[[dict[str, Any]], float]:
    return lambda side: float(side["recall"]["10"].get(str(category), 0.0))


def _rows(ours: dict[str, Any], peer: dict[str, Any]) -> list[tuple[str, str, str]]:
    def both(label: str, pick: Callable[[dict[str, Any]], Any], form: str) -> tuple[str, str, str]:
        def cell(side: dict[str, Any]) -> str:
            value = pick(side)
            return "-" if value is None else format(value, form)

        return label, cell(ours), cell(peer)

    rows = [
        both("recall@10 (LoCoMo evidence)", lambda s: s["recall_at_10"], ".3f"),
        *(
            both(f"  {name} (cat. {c})", _category(c), ".3f")
            for c, name in CATEGORIES.items()
            if str(c) in ours["recall"]["10"]
        ),
        both("latency p50, ms", lambda s: s["latency_ms"]["p50"], ".1f"),
        both("latency p99, ms", lambda s: s["latency_ms"]["p99"], ".1f"),
        both("latency mean, ms", lambda s: s["latency_ms"]["mean"], ".1f"),
        both("  p50 asked first / second, ms", _first_second, "s"),
        both("  engine's own time p50, ms", lambda s: s["engine_ms_p50"], ".1f"),
        both("answer size p50, KB", lambda s: s["answer_kb_p50"], ".1f"),
        both("server CPU per call, ms", lambda s: s["cpu_ms_per_call"], ".1f"),
        both("ingest, s", lambda s: s["ingest"]["seconds"], ".1f"),
        both("ingest, items/s", lambda s: s["ingest"]["items_per_second"], ".1f"),
        both("ingest, calls", lambda s: s["ingest"]["calls"], "d"),
        both("on disk, MB", lambda s: s["disk_mb"], ".2f"),
    ]
    return rows


def _machine(results: dict[str, Any]) -> str:
    machine = results["machine"]
    during = machine["during_questions"]
    return (
        f"Tiers that answered ours: {results['servers']['ours']['tiers']}. "
        f"Machine: {machine['cpus']} CPUs; load average (1/5/15 min) before "
        f"{'/'.join(map(str, machine['load_before']))}, after "
        f"{'/'.join(map(str, machine['load_after']))}. During the questions "
        f"({during['seconds']} s): 1-min load {during['load_1m']['min']}-"
        f"{during['load_1m']['max']} (median {during['load_1m']['median']}), "
        f"{during['busy_cores']} cores busy on average, {during['other_processes_cores']} of "
        f"them other processes', {during['steal_cores']} stolen. "
        f"Wall {results.get('wall_seconds', '?')} s."
    )


def markdown(results: dict[str, Any]) -> str:
    """The side-by-side as a Markdown table, with what was run and the machine's load."""
    ours, peer = results["servers"]["ours"], results["servers"]["peer"]
    lines = [
        f"## {ours['name']} vs {peer['name']}, MCP stdio, LoCoMo",
        "",
        f"{results['questions']} questions (categories "
        f"{', '.join(map(str, results['categories']))}) over "
        f"{len(results['conversations'])} conversations ({', '.join(results['conversations'])}), "
        f"{ours['ingest']['items']} turns; both on {results['model']['id']} "
        f"({results['model']['vectors_checked']} vectors checked, max diff "
        f"{results['model']['max_abs_diff']:.1e}).",
        "",
        f"| | {ours['name']} | {peer['name']} |",
        "|---|---:|---:|",
        *(f"| {label} | {a} | {b} |" for label, a, b in _rows(ours, peer)),
        "",
        _machine(results),
        "",
        results["notes"],
    ]
    return "\n".join(lines) + "\n"


def write_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    """``results.json`` and ``results.md`` in ``out`` (made if missing)."""
    out.mkdir(parents=True, exist_ok=True)
    data, table = out / "results.json", out / "results.md"
    data.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    table.write_text(markdown(results), encoding="utf-8")
    return [data, table]
