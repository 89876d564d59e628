"""The everyday prompts (``everyday.yaml``): what a developer types to a coding agent in a
working day, per project of the paraphrase set's loop stores.

Most are prompts no note answers (small edits, general questions, chat, new work memory
has not seen), the case where a push should be silent; the rest are related prompts a note
answers, asked as a developer would ask them. A loader only: the prompts are data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["EVERYDAY", "Prompt", "load_prompts"]

EVERYDAY = Path(__file__).with_name("everyday.yaml")
RELATED = "related"


@dataclass(frozen=True)
class Prompt:
    """One prompt to a project's agent; ``targets`` are the keys of the notes that answer
    it (any one is enough), none for a prompt no note answers."""

    project: str
    kind: str  # edit, general, chat, new-work (no note answers) or related
    text: str
    targets: tuple[str, ...] = ()


def load_prompts(path: Path = EVERYDAY) -> list[Prompt]:
    """Every prompt of the file, project by project.

    Raises:
        ValueError: The file is not shaped as ``everyday.yaml`` is.
    """
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of projects")
    prompts: list[Prompt] = []
    for project, sections in data.items():
        prompts += _project(str(project), sections, f"{path}: {project}")
    return prompts


def _project(project: str, sections: Any, where: str) -> list[Prompt]:
    if not isinstance(sections, dict) or set(sections) - {"silent", RELATED}:
        raise ValueError(f"{where}: expected 'silent' and 'related'")
    prompts = []
    for kind, texts in (sections.get("silent") or {}).items():
        if not isinstance(texts, list) or kind == RELATED:
            raise ValueError(f"{where}: silent.{kind} must be a list of prompts")
        prompts += [Prompt(project, str(kind), str(text)) for text in texts]
    for index, entry in enumerate(sections.get(RELATED) or []):
        if not isinstance(entry, dict) or not entry.get("notes") or not entry.get("prompt"):
            raise ValueError(f"{where}: related[{index}] needs a prompt and its notes")
        notes = tuple(str(key) for key in entry["notes"])
        prompts.append(Prompt(project, RELATED, str(entry["prompt"]), notes))
    return prompts
