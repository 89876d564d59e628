"""Agents for the A/B harness: each reads an iteration's prompt and returns an action.

``ReaderAgent`` (default, deterministic given its seed) stands for a competent model that
can only use what its prompt shows: it knows a fact exactly when the fact's answer key occurs
in the prompt. Missing a fact, it acts on a wrong answer the prompt shows for it (a
distractor's, or a hazard's that memory pushed) unless the prompt shows that answer
``rejected``; otherwise it explores, or — with probability ``guess_rate`` — guesses among the
answers any run comes across for that question (the distractors' and the true one) and may
err. Its success therefore depends entirely on
what reached the prompt. A memory block marked as about code that changed or was deleted
since it was noted (``### [ERROR] (who, when, src/x.py changed 2 hours ago)``) is a lead to
check, not a fact: the reader takes nothing from it, as a careful model would re-check it.

``OpenAIAgent`` sends the same prompt to any OpenAI-compatible chat endpoint and parses a
JSON action from the reply; a reply it cannot parse counts as exploring the first open
question (an iteration spent, as a confused model would spend it).
"""

from __future__ import annotations

import json
import random
import re
from typing import Protocol

import httpx

from benchmarks.ab.environment import Action
from benchmarks.ab.suite import Fact, Task

__all__ = ["Agent", "OpenAIAgent", "ReaderAgent", "marked", "pushed_as_fact", "trusted"]


class Agent(Protocol):
    async def act(self, prompt: str, task: Task, needed: list[Fact]) -> Action: ...


class ReaderAgent:
    """See the module docstring; ``rng`` makes its guesses reproducible."""

    def __init__(self, rng: random.Random, guess_rate: float = 0.1) -> None:
        self.rng = rng
        self.guess_rate = guess_rate

    async def act(self, prompt: str, task: Task, needed: list[Fact]) -> Action:
        prompt = trusted(prompt)
        answers = {f.id: f.answer for f in needed if f.answer in prompt}
        missing = [f for f in needed if f.id not in answers]
        if not missing:
            return Action.attempt(answers)
        fact = missing[0]
        misleading = [a for a in task.heard(fact.id) if a in prompt and not _rejected(a, prompt)]
        if misleading:
            return Action.attempt(answers | {fact.id: misleading[0]})
        if self.rng.random() < self.guess_rate:
            heard = [*task.decoys(fact.id), fact.answer]
            return Action.attempt(answers | {fact.id: self.rng.choice(heard)})
        return Action.explore(fact.id)


# A memory block's heading: ``### [TYPE] (who, when)``, and a third field when it is marked.
_BLOCK = re.compile(r"^### \[[A-Z]+\] \((?P<fields>.*)\)$")


def _rejected(answer: str, text: str) -> bool:
    return f"rejected: {answer}" in text


def marked(heading: str) -> bool:
    """Whether a memory block's heading line carries a staleness mark."""
    match = _BLOCK.match(heading)
    return match is not None and len(match["fields"].split(", ")) > 2


def pushed_as_fact(block: str, wrong: list[str]) -> bool:
    """Whether a memory block (heading line, then content) shows one of the ``wrong``
    answers as fact: unmarked, and not as the answer a step rejected."""
    heading = block.split("\n", 1)[0]
    return not marked(heading) and any(a in block and not _rejected(a, block) for a in wrong)


def trusted(prompt: str) -> str:
    """``prompt`` without the memory blocks marked stale (their heading and content line)."""
    lines = prompt.split("\n")
    kept: list[str] = []
    skip = False
    for line in lines:
        if _BLOCK.match(line) is not None:
            skip = marked(line)
        elif skip and not line.strip():
            skip = False
        if not skip:
            kept.append(line)
    return "\n".join(kept)


INSTRUCTIONS = """You are an agent working through a software task one step per iteration.
Each iteration you get the task prompt (current step first, with the questions it needs
answered, each with an id in brackets) plus any context from earlier iterations.
Reply with ONE JSON object and nothing else:
- {"action": "attempt", "answers": {"<id>": "<exact short answer>", ...}} when the prompt
  tells you every answer the current step needs (copy answers exactly as written);
- {"action": "explore", "fact": "<id>"} to spend this iteration finding out one answer."""


class OpenAIAgent:
    """Chat completions at ``base_url`` (``/chat/completions``), temperature 0."""

    def __init__(self, base_url: str, model: str, api_key: str | None, timeout: float = 120):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout
        )
        self.model = model

    async def act(self, prompt: str, task: Task, needed: list[Fact]) -> Action:
        reply = await self.client.post(
            "/chat/completions",
            json={
                "model": self.model,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": INSTRUCTIONS},
                    {"role": "user", "content": prompt},
                ],
            },
        )
        reply.raise_for_status()
        text = str(reply.json()["choices"][0]["message"]["content"] or "")
        return parse_action(text, needed)

    async def aclose(self) -> None:
        await self.client.aclose()


def parse_action(text: str, needed: list[Fact]) -> Action:
    """The first JSON object in ``text`` as an action; anything else explores the first
    open question."""
    fallback = Action.explore(needed[0].id) if needed else Action("invalid")
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match is None:
        return fallback
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return fallback
    if not isinstance(data, dict):
        return fallback
    if data.get("action") == "attempt" and isinstance(data.get("answers"), dict):
        return Action.attempt({str(k): str(v).strip() for k, v in data["answers"].items()})
    if data.get("action") == "explore" and isinstance(data.get("fact"), str):
        return Action.explore(data["fact"])
    return fallback
