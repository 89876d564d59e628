"""The soak benchmark's files: ``results.json`` and ``results.md`` (a table per phase)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["markdown", "write_outputs"]


def markdown(result: dict[str, Any]) -> str:
    """One row per phase: clients, calls served a second and over the sequential client's,
    reads' p50/p99/longest, refusals and the Retry-After they carried, the load, the cores
    other processes used."""
    rows = [
        "| phase | clients | served/s | goodput ratio | read p50 / p99 / max ms | refused "
        "| Retry-After s | load before → after | others' cores | quiet |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, phase in result["phases"].items():
        reads = phase["by_kind"]["search"]
        shown = "/".join(str(reads.get(key, "-")) for key in ("p50", "p99", "max"))
        retry = ", ".join(f"{k}: {n}" for k, n in phase["retry_after_s"].items()) or "-"
        load = f"{phase['load']['before'][0]} → {phase['load']['after'][0]}"
        rows.append(
            f"| {label} | {phase['clients']} | {phase['served_per_second']} "
            f"| {phase.get('goodput_ratio', '-')} | {shown} "
            f"| {phase['refused_429']} of {phase['calls']} | {retry} | {load} "
            f"| {phase.get('other_processes_cores', '-')} | {'yes' if phase['quiet'] else 'no'} |"
        )
    met = ", ".join(f"{name}: {'met' if ok else 'missed'}" for name, ok in result["met"].items())
    quiet = result["judged_on_a_quiet_machine"]
    note = (
        "other processes used at most 0.2 of a core in every phase (a quiet machine)"
        if quiet
        else "other processes used more than 0.2 of a core in a phase (others' cores above): "
        "the figures are the server's share of a shared machine, not its targets' conditions"
    )
    cpus = result["machine"]["cpus"]
    return "\n".join([*rows, "", f"{met}.", f"{cpus} cores; {note}.", ""])


def write_outputs(result: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(result), encoding="utf-8")
    return paths
