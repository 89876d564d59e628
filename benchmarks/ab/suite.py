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

Where facts come from (the environment's rules, ``environment.py``):

- ``explore``: an exploring iteration prints them at the end of a long tool output;
- ``error``: only running the step shows them, as an error message followed by its fix;
- ``prior_session``: an earlier session of the same project learned them. With memory
  (``mcp_enabled``) they are in the store when the run starts; without, they must be explored.

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
    "Distractor",
    "Fact",
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


class Task(_Model):
    id: Slug
    kind: Kind
    title: Line
    prompt: Annotated[str, StringConstraints(strip_whitespace=True, min_length=10, max_length=2000)]
    facts: Annotated[list[Fact], Field(min_length=1)]
    steps: Annotated[list[Step], Field(min_length=1, max_length=8)]
    distractors: Annotated[list[Distractor], Field(min_length=1)]

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
        self._answers_are_not_given_away()
        return self

    def fact(self, fact_id: str) -> Fact:
        return next(f for f in self.facts if f.id == fact_id)

    def _answers_are_not_given_away(self) -> None:
        keys = [(f"fact {f.id!r}", f.answer, f.text) for f in self.facts] + [
            (f"distractor of {d.fact!r}", d.answer, d.text) for d in self.distractors
        ]
        shown = [("prompt", self.prompt), ("title", self.title)]
        shown += [(f"steps[{i}]", s.description) for i, s in enumerate(self.steps)]
        shown += [(f"question of {f.id!r}", f.question) for f in self.facts]
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
