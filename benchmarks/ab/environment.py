"""The A/B environment: a task's steps, what each action reveals, and the task's PROMPT.md.

Rules (the agent sees only the prompt; the environment keeps the truth):

- ``explore`` a fact: one iteration whose output is a long, noisy tool transcript (about
  1.3 kB, so Ralph keeps it as "previous context"), with the fact's distractors somewhere in
  the middle and the fact itself as the last line (inside the last 200 characters Ralph's
  context manager keeps of a long output). A fact whose source is ``error`` cannot be read
  anywhere: exploring it runs the step, which fails with the fact's error message and then
  the fix (an error event).
- ``attempt`` the current step with answers: if every needed fact is answered with its answer
  key the step is done; otherwise the first wrong fact fails the step. A wrong answer prints
  ``rejected: <answer>``; a missing ``error`` fact prints its error and fix (both errors).
- The task is done when its last step is. The prompt file always starts with the current step
  and the questions it needs answered (the Ralph hook builds its query from a prompt's first
  300 characters), then the task text and the plan with finished steps ticked.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from benchmarks.ab.suite import Fact, Source, Task

__all__ = ["Action", "Event", "Outcome", "TaskEnvironment"]

_MODULES = ("api", "worker", "store", "auth", "billing", "sync", "cli", "cache", "jobs", "ui")
_NOUNS = ("session", "batch", "request", "record", "handler", "queue", "token", "report", "row")
_VERBS = ("loaded", "flushed", "scheduled", "validated", "parsed", "rendered", "retried")
NOISE_CHARS = 1_300


@dataclass(frozen=True)
class Action:
    """``explore`` one fact, or ``attempt`` the current step with answers by fact id."""

    kind: str
    fact: str | None = None
    answers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def explore(cls, fact: str) -> Action:
        return cls("explore", fact=fact)

    @classmethod
    def attempt(cls, answers: dict[str, str]) -> Action:
        return cls("attempt", answers=dict(answers))


class Outcome(StrEnum):
    EXPLORED = "explored"
    STEP_DONE = "step_done"
    ERROR = "error"
    INVALID = "invalid"


@dataclass(frozen=True)
class Event:
    iteration: int
    step: int
    action: Action
    outcome: Outcome


class TaskEnvironment:
    """One run of one task; ``rng`` draws the noise (seeded per run)."""

    def __init__(self, task: Task, rng: random.Random, prompt_file: Path) -> None:
        self.task = task
        self.rng = rng
        self.prompt_file = prompt_file
        self.step = 0
        self.events: list[Event] = []
        self._answers = [a.lower() for a in _all_answers(task)]
        self.write_prompt()

    @property
    def done(self) -> bool:
        return self.step >= len(self.task.steps)

    def needed(self) -> list[Fact]:
        """Facts the current step needs (none once the task is done)."""
        if self.done:
            return []
        return [self.task.fact(i) for i in self.task.steps[self.step].needs]

    def apply(self, action: Action, iteration: int) -> str:
        """Carry out ``action``; returns the iteration's output."""
        if action.kind == "explore" and action.fact in {f.id for f in self.task.facts}:
            fact = self.task.fact(action.fact)
            if fact.source is Source.ERROR:
                return self._record(iteration, action, Outcome.ERROR, self._failure(fact))
            return self._record(iteration, action, Outcome.EXPLORED, self._exploration(fact))
        if action.kind == "attempt" and not self.done:
            return self._attempt(action, iteration)
        return self._record(
            iteration, action, Outcome.INVALID, f"Nothing to do for {action.kind!r} here."
        )

    def write_prompt(self) -> None:
        task = self.task
        lines = [f"# {task.title}", ""]
        if self.done:
            lines += ["All steps are done.", ""]
        else:
            step = task.steps[self.step]
            lines += [f"Current step ({self.step + 1}/{len(task.steps)}): {step.description}"]
            lines += ["To finish it, you need to know:"]
            lines += [f"- [{f.id}] {f.question}" for f in self.needed()]
            lines += [""]
        lines += ["## Task", task.prompt.strip(), "", "## Plan"]
        lines += [
            f"- [{'x' if i < self.step else ' '}] {s.description}" for i, s in enumerate(task.steps)
        ]
        self.prompt_file.write_text("\n".join(lines) + "\n", encoding="utf-8")

    # --- internals ---------------------------------------------------------------------------

    def _attempt(self, action: Action, iteration: int) -> str:
        number = f"{self.step + 1}/{len(self.task.steps)}"
        for fact in self.needed():
            given = action.answers.get(fact.id)
            if given == fact.answer:
                continue
            if fact.source is Source.ERROR and given is None:
                return self._record(iteration, action, Outcome.ERROR, self._failure(fact))
            output = (
                f"Running step {number}...\n"
                f'ERROR: step {number} failed: {given!r} is wrong for "{fact.question}" '
                f"(rejected: {given})\n"
            )
            return self._record(iteration, action, Outcome.ERROR, output)
        description = self.task.steps[self.step].description
        output = self._record(
            iteration,
            action,
            Outcome.STEP_DONE,
            f"Step {number} done: {description}\nAll checks passed.",
        )
        self.step += 1
        self.write_prompt()
        return output

    def _exploration(self, fact: Fact) -> str:
        decoys = [f"Note: {d.text}" for d in self.task.distractors if d.fact == fact.id]
        noise = self._noise()
        middle = len(noise) // 2
        body = noise[:middle] + decoys + noise[middle:]
        return f"Looking into: {fact.question}\n" + "\n".join(body) + f"\nFound: {fact.text}\n"

    def _failure(self, fact: Fact) -> str:
        number = f"{self.step + 1}/{len(self.task.steps)}"
        return (
            f"Running step {number} to see what fails...\n"
            + "\n".join(self._noise())
            + f"\nERROR: {fact.error}\nFix: {fact.text}\n"
        )

    def _noise(self) -> list[str]:
        """Tool-output lines (logs, listings, test runs) that mention no answer key."""
        lines: list[str] = []
        size = 0
        while size < NOISE_CHARS:
            line = self._noise_line()
            if any(answer in line.lower() for answer in self._answers):
                continue
            lines.append(line)
            size += len(line) + 1
        return lines

    def _noise_line(self) -> str:
        rng = self.rng
        module, noun, verb = rng.choice(_MODULES), rng.choice(_NOUNS), rng.choice(_VERBS)
        templates = (
            f"DEBUG {module}.{noun}: {verb} {rng.randint(1, 900)} {noun}s in "
            f"{rng.randint(2, 400)} ms",
            f"  src/{module}/{noun}_{verb}.py  {rng.randint(20, 600)} lines",
            f"PASSED tests/test_{module}.py::test_{noun}_{verb} ({rng.randint(1, 90)} ms)",
            f"$ grep -rn '{noun}' src/{module} | head -{rng.randint(3, 20)}",
            f"INFO worker-{rng.randint(1, 8)} {verb} {noun} #{rng.randint(1000, 99999)}",
        )
        return rng.choice(templates)

    def _record(self, iteration: int, action: Action, outcome: Outcome, output: str) -> str:
        self.events.append(Event(iteration, self.step, action, outcome))
        return output


def _all_answers(task: Task) -> list[str]:
    return [f.answer for f in task.facts] + task.wrong_answers()
