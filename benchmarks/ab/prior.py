"""The earlier session of an episode's project: what it left in memory, and what has
changed in the code since.

An episode's project is its own folder with its own ``ralph.yaml``, as a user's would be,
so the engine judges memory against that project's code and no other. A task with a
``stale_fix`` hazard makes the folder a git repository holding the files its fixes name,
stores the fixes while the files are as the earlier session saw them (the engine ties each
to its file's blob), then moves the code on (the file deleted, or rewritten) before the
run starts, as a later commit would.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from benchmarks.ab.suite import CodeChange, HazardKind, Source, Task
from benchmarks.settings import store_settings
from ralph_context import ContextType, Engine, NewItem, Settings
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder

__all__ = ["code_moves_on", "make_project", "remember", "settings_of"]

# What the earlier session recorded its notes as, and where they came from.
EARLIER = "earlier session"
_GIT_USER = ("-c", "user.name=bench", "-c", "user.email=bench@example.invalid")


def settings_of(project: Path, **sections: dict[str, object]) -> Settings:
    """The settings of ``project`` (its ``ralph.yaml``, written when missing), its store in
    ``project/.agent/store``, and ``sections`` overridden."""
    config = project / "ralph.yaml"
    if not config.exists():
        config.write_text("learning:\n  mcp_context:\n    enabled: true\n", encoding="utf-8")
    return store_settings(Path(".agent/store"), config=config, **sections)


def make_project(task: Task, project: Path) -> None:
    """``project`` as the earlier session found it: a git repository holding the files the
    task's stale fixes name, committed (nothing when the task has none)."""
    files = [h.file for h in task.hazards if h.kind is HazardKind.STALE_FIX and h.file]
    if not files:
        return
    _git(project, "init", "-q")
    for name in files:
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""{name}, as the earlier session saw it."""\nSETTING = "old"\n')
    _git(project, "add", "--", *files)
    _git(project, *_GIT_USER, "commit", "-q", "-m", "as the earlier session saw it")


def code_moves_on(task: Task, project: Path) -> None:
    """What later commits did to the files the stale fixes name, committed."""
    hazards = [h for h in task.hazards if h.kind is HazardKind.STALE_FIX and h.file]
    if not hazards:
        return
    for hazard in hazards:
        path = project / str(hazard.file)
        if hazard.code is CodeChange.DELETED:
            _git(project, "rm", "-q", "--", str(hazard.file))
        else:
            path.write_text(f'"""{hazard.file}, rewritten since."""\nSETTING = "new"\n')
            _git(project, "add", "--", str(hazard.file))
    _git(project, *_GIT_USER, "commit", "-q", "-m", "the code moved on")


async def remember(
    task: Task, settings: Settings, loader: Callable[[EmbeddingsSettings], LocalEmbedder]
) -> None:
    """Store what the earlier session left: the facts it learned, the similar-sounding
    wrong values it came across next to them (their distractors), and before them the task's
    hazards, each as what it is (a fix as an error with its fix, a skill, a note): a refuted
    note's failure after the note, a correcting fact after its misleading note, in the order
    the session met them."""
    learned = {f.id for f in task.facts if f.source is Source.PRIOR_SESSION}
    items = [_hazard(h.kind, h.text) for h in task.hazards]
    for hazard in task.hazards:
        if hazard.kind is HazardKind.MISLEADING_NOTE and hazard.refuted and hazard.fact:
            question = task.fact(hazard.fact).question
            items.append(
                NewItem(
                    f'ERROR: step failed: {hazard.answer!r} is wrong for "{question}" '
                    f"(rejected: {hazard.answer})",
                    ContextType.ERROR,
                    source=EARLIER,
                    iteration=0,
                )
            )
    items += [_note(task.fact(i).text) for i in sorted(learned)]
    items += [_note(d.text) for d in task.distractors if d.fact in learned]
    if not items:
        return
    async with Engine(settings, model_loader=loader) as engine:
        await engine.store_many(items)


def _note(text: str) -> NewItem:
    return NewItem(text, ContextType.ITERATION, source=EARLIER, iteration=0)


def _hazard(kind: HazardKind, text: str) -> NewItem:
    if kind is HazardKind.STALE_FIX:
        return NewItem(text, ContextType.ERROR, source=EARLIER, iteration=0)
    if kind is HazardKind.IRRELEVANT_SKILL:
        return NewItem(text, ContextType.SKILL, source=EARLIER, iteration=0)
    return _note(text)


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)
