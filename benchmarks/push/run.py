"""``ralph-context bench push``: does a push carry only what is relevant, and nothing when
nothing is?

Each kind of data's prompts are asked as the prompt hook asks them (``collect.py``; the
LongMemEval questions may instead be replayed from the pools ``bench retrieval`` saved,
``replay.py``), what the search served is kept (``asked.jsonl``), and the push gate's
constants are fitted and graded by cross-validation (``fit.py``: folds by conversation,
question and project; every figure printed is held out), beside what a push carried before
the gate (every served item) and the trade-off between silence and the paraphrase set's
recall (``tradeoff.py``). ``--reuse asked.jsonl`` fits again without searching.

Usage::

    ralph-context bench push --locomo ../shared/datasets/locomo/locomo_dev.json \\
        --longmemeval-pools benchmarks/retrieval/results/longmemeval_dev70_pools.pkl
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.ab.run import DEFAULT_SUITE
from benchmarks.ab.suite import Task, load_suite
from benchmarks.push.asked import PROMPTS, Asked, load
from benchmarks.push.collect import (
    ADVERSARIAL,
    collect_locomo,
    collect_longmemeval,
    collect_projects,
)
from benchmarks.push.everyday import load_prompts
from benchmarks.push.fit import WEIGHTS, choose, cross_validate
from benchmarks.push.loops import collect_loops
from benchmarks.push.replay import served_from_pools
from benchmarks.push.table import Table
from benchmarks.push.tradeoff import trade_off
from benchmarks.retrieval.locomo import load_conversations
from benchmarks.retrieval.longmemeval import load_questions
from benchmarks.retrieval.paraphrase_data import STORES
from ralph_context import Settings
from ralph_context.config.agents import AgentsSettings
from ralph_context.config.retrieval import PushGate
from ralph_context.embeddings.local import load_embedder

__all__ = ["Plan", "evaluate", "fit_report", "reuse"]

Tick = Callable[[], None]


@dataclass(frozen=True)
class Plan:
    """What to ask: the project stores always (the first ``projects``); LoCoMo and
    LongMemEval (a file to fill stores from, or the pools a run saved) when given;
    ``conversations`` and ``questions`` cap them; the first ``loops`` tasks of bench ab's
    suite run as loops."""

    locomo: Path | None = None
    longmemeval: Path | None = None
    longmemeval_pools: Path | None = None
    conversations: int | None = None
    questions: int | None = None
    projects: int | None = None
    loops: int | None = None  # tasks of bench ab's default suite run (None: all; 0: none)

    def total(self) -> int:
        """How many prompts are asked (the pools' are replayed, not asked)."""
        stores = STORES[: self.projects]
        names = {s.project for s in stores}
        count = sum(len(s.queries) for s in stores)
        count += sum(1 for p in load_prompts() if p.project in names)
        if self.locomo is not None:
            for c in load_conversations(self.locomo)[: self.conversations]:
                asked = c.questions[: self.questions]
                count += sum(1 for q in asked if q.evidence or q.category == ADVERSARIAL)
        if self.longmemeval is not None:
            count += len(load_questions(self.longmemeval)[: self.questions])
        return count + len(self.loop_tasks())

    def loop_tasks(self) -> list[Task]:
        """The A/B suite's tasks whose loops are run."""
        return [] if self.loops == 0 else load_suite(DEFAULT_SUITE).tasks[: self.loops]


async def evaluate(
    plan: Plan, *, workdir: Path | None = None, progress: Callable[[int], Tick] | None = None
) -> dict[str, Any]:
    """Ask every prompt of ``plan``, then fit and grade the gate on what was served."""
    load_before = os.getloadavg()
    started = time.perf_counter()
    model = load_embedder(Settings.load(None).embeddings)
    stores = STORES[: plan.projects]
    everyday = load_prompts()
    tick = progress(plan.total()) if progress is not None else (lambda: None)
    asked: list[Asked] = []
    with tempfile.TemporaryDirectory(prefix="ralph-push-", dir=workdir) as tmp:
        root = Path(tmp)
        asked += await collect_projects(model, root / "projects", everyday, tick, stores=stores)
        if plan.locomo is not None:
            asked += await collect_locomo(
                plan.locomo,
                model,
                root / "locomo",
                tick,
                conversations=plan.conversations,
                questions=plan.questions,
            )
        if plan.longmemeval is not None:
            asked += await collect_longmemeval(
                plan.longmemeval, model, root / "longmemeval", tick, questions=plan.questions
            )
        asked += await collect_loops(plan.loop_tasks(), model, root / "loops", tick)
    if plan.longmemeval_pools is not None and plan.longmemeval is None:
        pools = pickle.loads(plan.longmemeval_pools.read_bytes())[: plan.questions]
        budget = AgentsSettings().prompt_budget_tokens
        asked += served_from_pools(pools, Settings.load(None), max_tokens=budget)
    results = fit_report(asked)
    results["asked"] = asked
    results["sources"] = {
        "locomo": str(plan.locomo) if plan.locomo else None,
        "longmemeval": str(plan.longmemeval) if plan.longmemeval else None,
        "longmemeval_pools": str(plan.longmemeval_pools) if plan.longmemeval_pools else None,
        "projects": [s.project for s in stores],
        "loop_tasks": [task.id for task in plan.loop_tasks()],
    }
    results["machine"] = {
        "cpus": os.cpu_count(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "seconds": round(time.perf_counter() - started, 1),
    }
    return results


def fit_report(asked: list[Asked]) -> dict[str, Any]:
    """The held-out figures, the choice made on all, the figures before the gate and with
    the shipped constants (``retrieval.push_gate``, in sample), and the trade-off."""
    held = cross_validate(asked)
    free = cross_validate(asked, weights=WEIGHTS)
    table = Table(asked)
    shipped = Settings.load(None).push_gate()  # a person's prompt's (loops: none)

    def graded(gate: PushGate | None) -> dict[str, Any]:
        return {kind: f.as_dict() for kind, f in table.by_kind(table.keep(gate)).items()}

    return {
        "prompts": {kind: int(mask.sum()) for kind, mask in table.of_kind.items()},
        "held_out": {kind: f.as_dict() for kind, f in held.kinds.items()},
        "held_out_categories": {
            kind: {name: f.as_dict() for name, f in cats.items()}
            for kind, cats in held.categories.items()
        },
        "held_out_text_tier": {kind: f.as_dict() for kind, f in held.text.items()},
        "fold_choices": [gate.model_dump() for gate in held.choices],
        "held_out_free_weight": {kind: f.as_dict() for kind, f in free.kinds.items()},
        "free_weight_fold_choices": [gate.model_dump() for gate in free.choices],
        "chosen": choose(Table([one for one in asked if one.kind in PROMPTS])).model_dump(),
        "shipped": shipped.model_dump() if shipped is not None else None,
        "shipped_in_sample": graded(shipped) if shipped is not None else {},
        "before_gate": graded(None),
        "trade_off": trade_off([one for one in asked if one.kind in PROMPTS]),
    }


def reuse(path: Path) -> dict[str, Any]:
    """Fit and grade again on a saved ``asked.jsonl``."""
    asked = load(path)
    results = fit_report(asked)
    results["asked"] = asked
    results["sources"] = {"reused": str(path)}
    results["machine"] = {"cpus": os.cpu_count(), "load_after": list(os.getloadavg())}
    return results
