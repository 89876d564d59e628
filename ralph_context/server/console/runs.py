"""The console's run pages: the iterations timeline (with the A/B results when a file of
them is present) and health and stats.

Charts are plain SVG drawn on the server from numbers computed here (no script, no
library): bar geometry is data, and the template only places it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ralph_context.errors import InvalidInput, RalphContextError
from ralph_context.models import IterationResult
from ralph_context.server.callers import hide_paths
from ralph_context.server.console.app import Visit

__all__ = ["AbKind", "ab_kinds", "health", "iterations", "timeline"]

PER_PAGE = 50
# recent_iterations answers 1,000 at most: the timeline pages through those.
MOST = 1_000
# A bar's widest, in hundredths of the chart (a few iterations do not fill it).
_WIDEST = 2.0


@dataclass(frozen=True)
class Bar:
    """One iteration in the timeline: where its bar goes and what it says on hover."""

    x: float
    width: float
    height: float
    ok: bool
    label: str


def timeline(shown: list[IterationResult]) -> list[Bar]:
    """Bars oldest to newest, at most 100 units wide in all, heights by duration (a failed
    iteration with no duration still shows, at a tenth)."""
    ordered = sorted(shown, key=lambda r: r.iteration)
    longest = max((r.duration_ms for r in ordered), default=0) or 1
    width = min(100 / max(len(ordered), 1), _WIDEST)
    return [
        Bar(
            x=round(n * width, 2),
            width=round(width * 0.85, 2),
            height=round(max(r.duration_ms / longest, 0.1) * 40, 2),
            ok=r.success,
            label=f"iteration {r.iteration}: {'ok' if r.success else 'failed'}, "
            f"{r.duration_ms} ms, {r.tokens_used} tokens",
        )
        for n, r in enumerate(ordered)
    ]


@dataclass(frozen=True)
class AbKind:
    """One task kind of an A/B run: mean iterations without and with memory."""

    name: str
    baseline: float
    memory: float
    reduction: float | None


def ab_kinds(path: Path | None) -> list[AbKind]:
    """The task kinds of ``bench ab``'s ``results.json`` at ``path`` (none when there is no
    such file or it is not one)."""
    if path is None or not path.is_file():
        return []
    try:
        kinds = json.loads(path.read_text(encoding="utf-8"))["kinds"]
        return [
            AbKind(
                name,
                float(kind["baseline"]["iterations_mean"]),
                float(kind["mcp_enabled"]["iterations_mean"]),
                None if kind.get("reduction") is None else float(kind["reduction"]),
            )
            for name, kind in kinds.items()
        ]
    except (OSError, ValueError, KeyError, TypeError):
        return []


async def iterations(visit: Visit) -> tuple[str, dict[str, Any]]:
    """``/console/iterations``: newest first, each with what it stored."""
    engine = visit.engine
    params = visit.request.query_params
    context: dict[str, Any] = {"page_name": "iterations", "problem": None, "rows": []}
    try:
        number = max(1, int(params.get("page", "1") or 1))
    except ValueError:
        number = 1
    try:
        recent = await engine.recent_iterations(min(number * PER_PAGE, MOST))
        shown = recent[(number - 1) * PER_PAGE :]
        stored: dict[int, int] = {}
        if shown:
            first = min(r.iteration for r in shown)
            stored = await engine.stored_per_iteration(first, max(r.iteration for r in shown))
    except (InvalidInput, RalphContextError) as exc:
        context["problem"] = str(exc)
        shown, stored, recent = [], {}, []
    ab_path = engine.settings.ab_results_path()
    kinds = ab_kinds(ab_path)
    most = max((max(k.baseline, k.memory) for k in kinds), default=1.0) or 1.0
    context.update(
        rows=[(r, stored.get(r.iteration, 0)) for r in shown],
        bars=timeline(shown),
        number=number,
        previous=visit.link("/iterations", page=number - 1) if number > 1 else None,
        following=(
            visit.link("/iterations", page=number + 1)
            if len(recent) == number * PER_PAGE and number * PER_PAGE < MOST
            else None
        ),
        kinds=kinds,
        ab_most=most,
        ab_path=ab_path if kinds else None,
    )
    return "iterations.html", context


async def health(visit: Visit) -> tuple[str, dict[str, Any]]:
    """``/console/health``: tier now and its changes, actors, counts, size, retrieval
    latency since start and the lifecycle's last passes."""
    engine = visit.engine
    observed = engine.observed
    stats, problem = None, None
    try:
        stats = await engine.stats()
    except RalphContextError as exc:
        problem = hide_paths(str(exc), engine.settings)
    state = engine.health()
    # The console is read over HTTP: no path of the server's file system (see callers). An
    # actor left off by configuration has no error: what its supervisor keeps as one
    # ("inference not_configured") is its state, which the state column shows.
    actors = [
        (
            name,
            state.state(name),
            replace(
                snap,
                last_error=None
                if name in state.not_configured
                else hide_paths(snap.last_error, engine.settings),
            ),
        )
        for name, snap in state.actors.items()
    ]
    return "health.html", {
        "page_name": "health",
        "health": state,
        "actors": actors,
        "stats": stats,
        "problem": problem,
        "latency": observed.latency.summary(),
        "since": observed.started,
        "tiers": list(reversed(observed.tiers)),
        "passes": list(reversed(observed.passes)),
        "iteration": engine.current_iteration,
        "read_only": not visit.writable,
        "write_error": hide_paths(state.write_error, engine.settings),
    }
