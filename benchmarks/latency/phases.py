"""The suite's phases, each on its own: one that raises is named, the others still run.

A suite run at 100k takes ten minutes or more (with the quality model, longer); one phase
failing (a hook that refused the store's model, a server that did not start) used to lose
every figure the others had measured. Now a failed phase leaves its keys out of the run
and its error under ``failed``; the summary says ``None`` for what it would have given, and
the files are written all the same.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Phases", "failures", "value"]


class Phases:
    """Runs one store size's phases into ``run``, recording a phase's error instead of
    raising it (``run["failed"][name]``); ``tick`` after each phase that counts."""

    def __init__(self, run: dict[str, Any], tick: Callable[[], None], where: str = "") -> None:
        self.run = run
        self.tick = tick
        self.where = where or f"{run.get('items', '?')} items"

    async def __call__(
        self, name: str, body: Callable[[], Awaitable[None]], *, tick: bool = True
    ) -> bool:
        """Run ``body``; False (and the error recorded and shown) if it raised."""
        try:
            await body()
        except Exception as error:  # every failure is reported; none stops the run
            self.run.setdefault("failed", {})[name] = f"{type(error).__name__}: {error}"
            print(
                f"bench latency: {self.where}, phase {name!r} failed:",
                file=sys.stderr,
            )
            traceback.print_exception(error, file=sys.stderr)
            return False
        finally:
            if tick:
                self.tick()
        return True


def value(run: dict[str, Any] | None, *path: str) -> Any:
    """``run[path[0]][path[1]]...``, or None where the run (or a failed phase) has no key."""
    found: Any = run
    for key in path:
        if not isinstance(found, dict) or key not in found:
            return None
        found = found[key]
    return found


def failures(runs: list[dict[str, Any]], *others: dict[str, Any]) -> dict[str, str]:
    """Every failed phase of every run (``"<items> items: <phase>"``) and of ``others``
    (phases of the whole run, keyed by their name)."""
    found = {
        f"{run.get('items', '?')} items: {name}": error
        for run in runs
        for name, error in run.get("failed", {}).items()
    }
    for other in others:
        found |= other.get("failed", {})
    return found
