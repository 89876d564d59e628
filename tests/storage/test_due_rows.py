"""A clock pass reads only the rows it can move, and plans exactly what a full read plans."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ralph_context.config import LifecycleSettings
from ralph_context.lifecycle.policy import Plan, plan_lifecycle
from ralph_context.models import ContextItem, ContextState, ContextType
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.table.filters import DueFilter
from tests.helpers import unit

STATES = (ContextState.ACTIVE, ContextState.AGING, ContextState.SUMMARIZED)
TYPES = (ContextType.OUTPUT, ContextType.ERROR, ContextType.SKILL, ContextType.TASK)


def _store(tmp_path: Path) -> LanceStore:
    """Every combination of type, state, age (0-199 iterations before iteration 200) and
    usefulness (default, useless, useful)."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    rows = []
    combos = itertools.product(TYPES, STATES, range(0, 200, 7), (0.5, 0.1, 0.9))
    for n, (kind, state, age, usefulness) in enumerate(combos):
        item = ContextItem(
            content=f"item {n}",
            content_type=kind,
            state=state,
            created_iteration=200 - age,
            usefulness_score=usefulness,
        )
        rows.append((item, unit(1, n % 5, 0, 1)))
    store.add_items(rows)
    return store


def _sets(plan: Plan) -> tuple[frozenset[str], ...]:
    return (
        frozenset(plan.to_aging),
        frozenset(plan.to_summarize),
        frozenset(plan.to_archive),
        frozenset(plan.to_prune),
    )


@pytest.mark.parametrize("prune_min_usefulness", [0.3, 0.7])
@pytest.mark.parametrize("now", [200, 230, 320])
def test_due_rows_plan_what_reading_every_row_plans(
    tmp_path: Path, now: int, prune_min_usefulness: float
) -> None:
    settings = LifecycleSettings(prune_min_usefulness=prune_min_usefulness)
    store = _store(tmp_path)
    every = store.age_rows()
    due = store.due_rows(
        DueFilter(
            aging_before=now - settings.aging_after_iterations,
            summarize_before=now - settings.summarize_after_iterations,
            archive_before=now - settings.archive_after_iterations,
            ageless=settings.ageless_types,
        ),
        now - settings.prune_after_iterations,
        settings.prune_min_usefulness,
    )
    full = plan_lifecycle(every, (), now=now, settings=settings)
    narrow = plan_lifecycle(due, (), now=now, settings=settings)
    assert _sets(narrow) == _sets(full)
    assert not full.empty
    # Rows that cannot move are not read: a settled summary, a young item, a useful skill.
    moving = {i for part in _sets(full) for i in part}
    assert {row.id for row in due} >= moving
    if prune_min_usefulness < 0.5:  # above the default usefulness, every old row can go
        assert len(due) < len(every)
        assert len(due) <= len(moving) + len(every) // 4
