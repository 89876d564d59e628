"""Which items change state, decided from ages and usefulness alone (pure, no I/O).

Age is measured in iterations on the lifecycle clock (the latest stored iteration):
active (age ≤ aging_after), aging (≤ summarize_after), summarized (≤ archive_after), archived
after that. Types in ``ageless_types`` (skills, the task) stay active whatever their age.
Pruning deletes for good, so it needs two reasons at once: old (age > prune_after) and judged
useless (usefulness < prune_min_usefulness).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ralph_context.config import LifecycleSettings
from ralph_context.models import ContextState
from ralph_context.storage.lance_store import AgeRow
from ralph_context.storage.lifecycle.archive import ArchivedItem

__all__ = ["Plan", "plan_lifecycle", "plan_prune", "plan_summarize", "state_for_age", "victims"]

_ORDER = {
    ContextState.ACTIVE: 0,
    ContextState.AGING: 1,
    ContextState.SUMMARIZED: 2,
    ContextState.ARCHIVED: 3,
}


def state_for_age(age: int, settings: LifecycleSettings) -> ContextState:
    """The state an item of this age belongs in."""
    if age > settings.archive_after_iterations:
        return ContextState.ARCHIVED
    if age > settings.summarize_after_iterations:
        return ContextState.SUMMARIZED
    if age > settings.aging_after_iterations:
        return ContextState.AGING
    return ContextState.ACTIVE


@dataclass(frozen=True)
class Plan:
    """Ids per action. An id appears in at most one list."""

    to_aging: tuple[str, ...] = ()
    to_summarize: tuple[str, ...] = ()
    to_archive: tuple[str, ...] = ()
    to_prune: tuple[str, ...] = ()
    to_prune_archived: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.to_aging
            or self.to_summarize
            or self.to_archive
            or self.to_prune
            or self.to_prune_archived
        )


def _prunable(age: int, usefulness: float, settings: LifecycleSettings) -> bool:
    return age > settings.prune_after_iterations and usefulness < settings.prune_min_usefulness


def plan_lifecycle(
    rows: Sequence[AgeRow],
    archived: Sequence[ArchivedItem],
    *,
    now: int,
    settings: LifecycleSettings,
) -> Plan:
    """Every move the clock calls for. States only move forward; nothing is revived."""
    aging: list[str] = []
    summarize: list[str] = []
    archive: list[str] = []
    prune: list[str] = []
    for row in rows:
        age = now - row.created_iteration
        if _prunable(age, row.usefulness, settings):
            prune.append(row.id)
            continue
        if row.content_type in settings.ageless_types:
            continue
        target = state_for_age(age, settings)
        if _ORDER[target] <= _ORDER[row.state]:
            continue
        if target is ContextState.ARCHIVED:
            archive.append(row.id)
        elif target is ContextState.SUMMARIZED:
            summarize.append(row.id)
        else:
            aging.append(row.id)
    prune_archived = [
        entry.item.id
        for entry in archived
        if _prunable(now - entry.item.created_iteration, entry.item.usefulness_score, settings)
    ]
    return Plan(tuple(aging), tuple(summarize), tuple(archive), tuple(prune), tuple(prune_archived))


def plan_summarize(rows: Sequence[AgeRow], *, now: int, older_than: int) -> Plan:
    """Active or aging items older than ``older_than`` iterations (the on-demand tool)."""
    chosen = tuple(
        row.id
        for row in rows
        if row.state in (ContextState.ACTIVE, ContextState.AGING)
        and now - row.created_iteration > older_than
    )
    return Plan(to_summarize=chosen)


def plan_prune(
    rows: Sequence[AgeRow], archived: Sequence[ArchivedItem], *, min_usefulness: float
) -> Plan:
    """Items judged useless (usefulness below ``min_usefulness``), at any age: a score under
    the 0.5 start can only come from explicit negative feedback."""
    return Plan(
        to_prune=tuple(row.id for row in rows if row.usefulness < min_usefulness),
        to_prune_archived=tuple(
            entry.item.id for entry in archived if entry.item.usefulness_score < min_usefulness
        ),
    )


def victims(
    rows: Sequence[AgeRow],
    archived: Sequence[ArchivedItem],
    *,
    now: int,
    settings: LifecycleSettings,
) -> tuple[list[str], list[str]]:
    """Deletion order when the store is over its size limit: archived items first, then hot
    ones, each lowest usefulness first and oldest first among equals. Active items (the
    last few iterations) are never victims: the loop is using them."""
    cold = sorted(archived, key=lambda e: (e.item.usefulness_score, e.item.created_iteration))
    hot = sorted(
        (r for r in rows if now - r.created_iteration > settings.aging_after_iterations),
        key=lambda r: (r.usefulness, r.created_iteration),
    )
    return [e.item.id for e in cold], [r.id for r in hot]
