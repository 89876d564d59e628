"""A/B task suites: the documented schema and its loader.

A suite is YAML (or JSON) data, so new tasks need no code. Shape (every key required unless
marked optional)::

    name: default
    description: optional text
    tasks:
      - id: fix-login-timeout          # unique slug
        kind: bug_fix                  # see KINDS below
        title: One line
        prompt: |                      # the task as its owner would write PROMPT.md
          The login endpoint times out ...
        facts:                         # what the agent must know to finish
          - id: db-host                # unique within the task
            question: Which host does the session store run on?
            text: The session store runs on cache-02.internal, not on the app host.
            answer: cache-02.internal  # short key; must occur in `text`
            source: explore            # explore | error | prior_session
            error: optional            # required when source is `error`
        steps:                         # done in order
          - description: Point the session client at the right host.
            needs: [db-host]           # 1-3 fact ids
        distractors:                   # at least one per task
          - fact: db-host              # the fact it imitates
            text: The legacy session store ran on cache-01.internal until March.
            answer: cache-01.internal
        hazards:                       # optional: memory an earlier session left that can hurt
          - kind: stale_fix            # stale_fix | irrelevant_skill | misleading_note
            fact: db-host              # the fact it misleads on (not for irrelevant_skill)
            text: "Fix: in src/session/client.py set SESSION_HOST to cache-03.internal."
            answer: cache-03.internal  # the wrong answer it gives (not for irrelevant_skill)
            file: src/session/client.py  # stale_fix: the file the fix names
            code: deleted              # stale_fix: deleted | changed since the fix was noted
            refuted: false             # misleading_note: its rejection is in memory too

Where facts come from (the environment's rules, ``environment.py``):

- ``explore``: an exploring iteration prints them at the end of a long tool output;
- ``error``: only running the step shows them, as an error message followed by its fix;
- ``prior_session``: an earlier session of the same project learned them. With memory
  (``mcp_enabled``) they are in the store when the run starts; without, they must be explored.

Hazards are what makes memory hurt, stored by the earlier session (so only the memory variant
sees them), each with the product behaviour it tests:

- ``stale_fix``: a fix that named ``file`` when it was noted; the code has moved on since
  (the file ``deleted``, or ``changed``) and the fact's answer is another. The episode's
  project is a git repository holding the file when the fix is stored; the run starts after
  the change. Memory must not push it as fact (a deleted file's fix is withheld, a changed
  one's is marked).
- ``irrelevant_skill``: a skill about something else (no answer key): it may cost tokens and
  crowd the budget, and must not cost iterations.
- ``misleading_note``: a note giving a wrong answer; ``refuted``: the earlier session acted on
  it and the step failed (its ``rejected:`` error is stored too), else a newer note of the
  same session gives the right answer (the fact must then be ``prior_session``). Memory must
  carry the correction with the note.

A hazard's wrong answer counts as heard of, like a distractor's: an agent shown it acts on it.

Distractors are plausible wrong facts. Those of ``prior_session`` facts were noted by the
earlier session next to the facts (so with memory they are in the store too); the others
appear in the exploring output of their fact, in every variant. An agent that acts on a
distractor's answer fails the step.

Checks, each failing with :class:`SuiteError` naming the task and field: answers occur in
their fact's text; no answer occurs in any other text of its task (prompt, steps, other facts,
distractors), or a reader would "know" a fact it was never shown; fact texts stay within
:data:`MAX_FACT_CHARS` (Ralph's context manager keeps only the last 200 characters of a long
output, and the fact must survive that in the baseline too); every fact is needed by a step.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

__all__ = [
    "KINDS",
    "MAX_FACT_CHARS",
    "CodeChange",
    "Distractor",
    "Fact",
    "Hazard",
    "HazardKind",
    "Kind",
    "Source",
    "Step",
    "Suite",
    "SuiteError",
    "Task",
    "load_suite",
]

MAX_FACT_CHARS = 180
Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=64)]
Line = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=300)]
FactText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=10, max_length=MAX_FACT_CHARS)
]
AnswerKey = Annotated[str, StringConstraints(strip_whitespace=True, min_length=2, max_length=60)]


class SuiteError(ValueError):
    """A suite that cannot be used; the message names the task and field."""


class Kind(StrEnum):
    """The seed's five task kinds; the complexity each stands for is in :data:`KINDS`."""

    SIMPLE_FILE_CREATION = "simple_file_creation"
    BUG_FIX = "bug_fix"
    FEATURE_IMPLEMENTATION = "feature_implementation"
    MULTI_STEP_REFACTORING = "multi_step_refactoring"
    ERROR_RECOVERY = "error_recovery"


KINDS: dict[Kind, str] = {
    Kind.SIMPLE_FILE_CREATION: "low",
    Kind.BUG_FIX: "medium",
    Kind.FEATURE_IMPLEMENTATION: "high",
    Kind.MULTI_STEP_REFACTORING: "high",
    Kind.ERROR_RECOVERY: "medium",
}


class Source(StrEnum):
    EXPLORE = "explore"
    ERROR = "error"
    PRIOR_SESSION = "prior_session"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fact(_Model):
    id: Slug
    question: Line
    text: FactText
    answer: AnswerKey
    source: Source
    error: Line | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Fact:
        if self.answer not in self.text:
            raise ValueError(f"answer {self.answer!r} does not occur in text {self.text!r}")
        if self.source is Source.ERROR and self.error is None:
            raise ValueError("a fact with source 'error' needs the 'error' message that shows it")
        return self


class Step(_Model):
    description: Line
    needs: Annotated[list[Slug], Field(min_length=1, max_length=3)]


class Distractor(_Model):
    fact: Slug
    text: FactText
    answer: AnswerKey

    @model_validator(mode="after")
    def _consistent(self) -> Distractor:
        if self.answer not in self.text:
            raise ValueError(f"answer {self.answer!r} does not occur in text {self.text!r}")
        return self


class HazardKind(StrEnum):
    STALE_FIX = "stale_fix"
    IRRELEVANT_SKILL = "irrelevant_skill"
    MISLEADING_NOTE = "misleading_note"


class CodeChange(StrEnum):
    DELETED = "deleted"
    CHANGED = "changed"


class Hazard(_Model):
    kind: HazardKind
    text: FactText
    fact: Slug | None = None
    answer: AnswerKey | None = None
    file: Annotated[str, StringConstraints(pattern=r"^[\w.-]+(/[\w.-]+)+$")] | None = None
    code: CodeChange = CodeChange.DELETED
    refuted: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> Hazard:
        if self.kind is HazardKind.IRRELEVANT_SKILL:
            if self.fact is not None or self.answer is not None:
                raise ValueError("an irrelevant_skill misleads on no fact: no 'fact', 'answer'")
            return self
        if self.fact is None or self.answer is None:
            raise ValueError(
                f"a {self.kind.value} needs the 'fact' it misleads on and its 'answer'"
            )
        if self.answer not in self.text:
            raise ValueError(f"answer {self.answer!r} does not occur in text {self.text!r}")
        if self.kind is HazardKind.STALE_FIX and (self.file is None or self.file not in self.text):
            raise ValueError("a stale_fix needs the 'file' it names, and its text must name it")
        return self


class Task(_Model):
    id: Slug
    kind: Kind
    title: Line
    prompt: Annotated[str, StringConstraints(strip_whitespace=True, min_length=10, max_length=2000)]
    facts: Annotated[list[Fact], Field(min_length=1)]
    steps: Annotated[list[Step], Field(min_length=1, max_length=8)]
    distractors: Annotated[list[Distractor], Field(min_length=1)]
    hazards: list[Hazard] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        ids = [f.id for f in self.facts]
        if len(set(ids)) != len(ids):
            raise ValueError(f"fact ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
        needed = {need for step in self.steps for need in step.needs}
        if unknown := needed - set(ids):
            raise ValueError(f"steps need unknown facts {sorted(unknown)}")
        if unused := set(ids) - needed:
            raise ValueError(f"facts no step needs: {sorted(unused)}")
        for distractor in self.distractors:
            if distractor.fact not in ids:
                raise ValueError(f"a distractor imitates unknown fact {distractor.fact!r}")
        for hazard in self.hazards:
            if hazard.fact is not None and hazard.fact not in ids:
                raise ValueError(f"a {hazard.kind.value} misleads on unknown fact {hazard.fact!r}")
            if (
                hazard.kind is HazardKind.MISLEADING_NOTE
                and not hazard.refuted
                and self.fact(str(hazard.fact)).source is not Source.PRIOR_SESSION
            ):
                raise ValueError(
                    "an unrefuted misleading_note is corrected by the earlier session: "
                    f"its fact {hazard.fact!r} must be a prior_session one"
                )
        self._answers_are_not_given_away()
        return self

    def fact(self, fact_id: str) -> Fact:
        return next(f for f in self.facts if f.id == fact_id)

    def decoys(self, fact_id: str) -> list[str]:
        """The wrong answers to ``fact_id`` any run may come across: its distractors'."""
        return [d.answer for d in self.distractors if d.fact == fact_id]

    def heard(self, fact_id: str) -> list[str]:
        """The wrong answers to ``fact_id`` an agent may come across: its distractors', and
        its hazards' (which only memory shows)."""
        return self.decoys(fact_id) + [
            h.answer for h in self.hazards if h.fact == fact_id and h.answer
        ]

    def wrong_answers(self) -> list[str]:
        """Every distractor's and hazard's answer."""
        return [a for f in self.facts for a in self.heard(f.id)]

    def _answers_are_not_given_away(self) -> None:
        keys = [(f"fact {f.id!r}", f.answer, f.text) for f in self.facts] + [
            (f"distractor of {d.fact!r}", d.answer, d.text) for d in self.distractors
        ]
        keys += [
            (f"{h.kind.value} of {h.fact!r}", h.answer, h.text) for h in self.hazards if h.answer
        ]
        shown = [("prompt", self.prompt), ("title", self.title)]
        shown += [(f"steps[{i}]", s.description) for i, s in enumerate(self.steps)]
        shown += [(f"question of {f.id!r}", f.question) for f in self.facts]
        shown += [(f"hazards[{i}]", h.text) for i, h in enumerate(self.hazards) if not h.answer]
        for owner, answer, own_text in keys:
            others = shown + [(o, t) for o, _, t in keys if t is not own_text]
            for place, text in others:
                if answer.lower() in text.lower():
                    raise ValueError(f"the answer {answer!r} of {owner} also occurs in {place}")


class Suite(_Model):
    name: Slug
    description: str = ""
    tasks: Annotated[list[Task], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique(self) -> Suite:
        ids = [t.id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise ValueError(f"task ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
        return self

    def by_kind(self) -> dict[Kind, list[Task]]:
        return {kind: [t for t in self.tasks if t.kind is kind] for kind in Kind}


def load_suite(path: Path) -> Suite:
    """Read and check a suite file (``.yaml``/``.yml``/``.json``).

    Raises:
        SuiteError: Unreadable, or a field is wrong; the message names the task and field.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read the suite ({exc.strerror or exc})") from None
    try:
        data = json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SuiteError(f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'} ({exc})") from None
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        raise SuiteError(f"{path}: {_describe(exc, data)}") from None


def _describe(exc: ValidationError, data: Any) -> str:
    """Each problem as ``tasks[3] (fix-login).facts[1].answer: message``."""
    problems = []
    for error in exc.errors():
        location = error["loc"]
        parts: list[str] = []
        node = data
        for key in location:
            parts.append(f"[{key}]" if isinstance(key, int) else f".{key}" if parts else str(key))
            node = node[key] if _indexable(node, key) else None
            if isinstance(key, int) and isinstance(node, dict) and "id" in node:
                parts[-1] += f" ({node['id']})"
        where = "".join(parts) or "suite"
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


def _indexable(node: Any, key: Any) -> bool:
    if isinstance(node, dict):
        return key in node
    return isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node)
