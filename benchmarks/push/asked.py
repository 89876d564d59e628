"""What the push benchmark keeps of one prompt: what the hook's search served, labelled.

A search is asked once per prompt, as the prompt hook asks it (``Engine.search(prompt,
max_tokens=agents.prompt_budget_tokens)``, everything else at its defaults); each served
item is kept with its score, its breakdown and whether it answers the prompt. The gate is a
function of exactly that (``ralph_context.retrieval.gate``), so it can be fitted and graded
on the saved answers without searching again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ralph_context.models import ContextItem, RetrievedItem

__all__ = ["KINDS", "PROMPTS", "Asked", "Served", "load", "save", "served"]

# The kinds of data, in the order the report lists them: people's prompts, then a loop's own
# state (Ralph's queries), which the prompt gate is not fitted on.
KINDS = ("everyday", "paraphrase", "locomo", "longmemeval", "loop")
PROMPTS = KINDS[:4]


@dataclass(frozen=True)
class Served:
    """One item a search served: its score and breakdown, and whether it answers."""

    score: float
    breakdown: Mapping[str, float]
    relevant: bool
    type: str = ""


@dataclass(frozen=True)
class Asked:
    """One prompt: its kind of data, the unit folds are cut along (a conversation, a
    project's store, a LongMemEval question), a finer category for the report, whether the
    store answers it, and what the search served, best first."""

    kind: str
    group: str
    category: str
    answerable: bool
    text: str
    items: tuple[Served, ...] = field(default=())


def served(
    found: Sequence[RetrievedItem], answers: Callable[[ContextItem], bool]
) -> tuple[Served, ...]:
    """A search's items as :class:`Served`; ``answers`` says whether an item answers."""
    return tuple(
        Served(
            round(hit.score, 6),
            {k: round(v, 6) for k, v in hit.breakdown.items()},
            answers(hit.item),
            hit.item.content_type.value,
        )
        for hit in found
    )


def save(asked: Sequence[Asked], path: Path) -> None:
    """The prompts as JSON lines (one prompt a line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for one in asked:
            out.write(json.dumps(asdict(one), sort_keys=True) + "\n")


def load(path: Path) -> list[Asked]:
    """Prompts saved by :func:`save`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [_asked(json.loads(line)) for line in lines if line.strip()]


def _asked(row: dict[str, Any]) -> Asked:
    items = tuple(
        Served(float(i["score"]), dict(i["breakdown"]), bool(i["relevant"]), str(i["type"]))
        for i in row["items"]
    )
    return Asked(
        str(row["kind"]),
        str(row["group"]),
        str(row["category"]),
        bool(row["answerable"]),
        str(row["text"]),
        items,
    )
