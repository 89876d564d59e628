"""One episode: an agent working through one task, the Ralph way, with or without memory.

Each iteration does what Ralph 1.2.3's ``_aexecute_iteration`` does: the prompt comes from
Ralph's own ``ContextManager`` (PROMPT.md, plus the last outputs that fit its 8,000-character
window), the adapter runs, and a successful output longer than 1,000 characters goes back
into the context manager. The adapter here is the agent acting in the environment.

``mcp_enabled`` attaches the real Ralph plugin hook (``ralph_context_ralph.attach``) to that
loop: the hook appends what the real engine retrieves (real embeddings, scoring, lifecycle)
within ``retrieval.max_context_tokens`` — set to 2,000, the token size of Ralph's own
8,000-character window — and stores every iteration. What an earlier session of the
project left (``prior``: facts, their distractors, the task's hazards) is stored first by an
engine that is then closed: the run reopens the store, as a new session would.

What memory costs is counted per measured iteration: the tokens of the injected section, its
items, those holding an answer the current step needs (precision is their share), and
whether a hazard's wrong answer was pushed as fact (unmarked, and not as a step's rejected
answer).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ralph_orchestrator.adapters.base import ToolResponse
from ralph_orchestrator.context import ContextManager

from benchmarks.ab.agents import Agent, pushed_as_fact
from benchmarks.ab.environment import Outcome, TaskEnvironment
from benchmarks.ab.prior import code_moves_on, make_project, remember, settings_of
from benchmarks.ab.suite import Task
from ralph_context import Engine
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.rendering import CONTEXT_HEADING
from ralph_context.retrieval.scoring import estimate_tokens
from ralph_context_ralph import attach

__all__ = ["BASELINE", "CONTEXT_TOKENS", "MCP", "VARIANTS", "Episode", "run_episode"]

BASELINE = "baseline"
MCP = "mcp_enabled"
VARIANTS = (BASELINE, MCP)
# Ralph's window is 8,000 characters; at ~4 characters a token, memory gets as much.
RALPH_WINDOW_CHARS = 8_000
CONTEXT_TOKENS = RALPH_WINDOW_CHARS // 4
# Ralph feeds an output back into its context only when it is longer than this.
RALPH_MIN_OUTPUT = 1_000
# An error counts as recovered when its step is done within this many further iterations.
RECOVERY_WINDOW = 3


@dataclass
class Episode:
    task: str
    kind: str
    variant: str
    seed: int
    iterations: int = 0
    success: bool = False
    errors: int = 0
    recovered: int = 0
    retrieval_ms: list[float] = field(default_factory=list)
    relevance: list[float] = field(default_factory=list)
    # Tokens the hook injected per measured iteration (0 when it injected nothing).
    injected_tokens: list[int] = field(default_factory=list)
    # Items injected per measured iteration, and those holding a needed answer.
    injected_items: list[int] = field(default_factory=list)
    useful_items: list[int] = field(default_factory=list)
    utilization: list[float] = field(default_factory=list)
    # Measured iterations whose section pushed a hazard's wrong answer unmarked.
    hazard_pushed: int = 0


class _Adapter:
    """Ralph's adapter interface over agent + environment (what a CLI agent would do)."""

    name = "bench-agent"

    def __init__(self, agent: Agent, env: TaskEnvironment, clock: SimpleNamespace) -> None:
        self.agent = agent
        self.env = env
        self.clock = clock

    async def aexecute(self, prompt: str, **_: Any) -> ToolResponse:
        action = await self.agent.act(prompt, self.env.task, self.env.needed())
        output = self.env.apply(action, self.clock.iterations)
        return ToolResponse(success=True, output=output)


async def run_episode(
    task: Task,
    variant: str,
    *,
    seed: int,
    agent: Callable[[random.Random], Agent],
    workdir: Path,
    model: LocalEmbedder | None,
    max_iterations: int,
) -> Episode:
    """Run ``task`` once; ``agent(rng)`` builds the agent for this run's seed (the same seed
    in both variants, so their guesses are paired)."""
    workdir.mkdir(parents=True)  # noqa: ASYNC240 - sequential, like Ralph's own loop
    episode = Episode(task.id, task.kind.value, variant, seed)
    env = TaskEnvironment(task, random.Random(seed), workdir / "PROMPT.md")
    manager = ContextManager(env.prompt_file, cache_dir=workdir / ".agent" / "cache")
    clock = SimpleNamespace(iterations=0)
    adapter = _Adapter(agent(random.Random(seed)), env, clock)
    host = SimpleNamespace(
        context_manager=manager,
        adapters={adapter.name: adapter},
        current_adapter=adapter,
        metrics=clock,
        prompt_file=env.prompt_file,
    )
    handle = None
    if variant == MCP:
        settings = settings_of(
            workdir,
            retrieval={"max_context_tokens": CONTEXT_TOKENS},
            skillbook={"enabled": False},
        )
        loader = load_embedder if model is None else (lambda _: model)
        make_project(task, workdir)
        await remember(task, settings, loader)
        code_moves_on(task, workdir)
        engine = Engine(settings, model_loader=loader)
        handle = attach(host, engine, task=task.id, cache_dir=workdir / "cache")
    try:
        await _loop(env, host, adapter, episode, max_iterations, measure=handle is not None)
    finally:
        if handle is not None:
            handle.detach()
    _count_recoveries(env, episode)
    return episode


async def _loop(
    env: TaskEnvironment,
    host: SimpleNamespace,
    adapter: _Adapter,
    episode: Episode,
    max_iterations: int,
    *,
    measure: bool,
) -> None:
    for iteration in range(1, max_iterations + 1):
        host.metrics.iterations = iteration
        started = time.perf_counter()
        prompt = host.context_manager.get_prompt()
        if measure:
            episode.retrieval_ms.append((time.perf_counter() - started) * 1000)
            _measure_context(prompt, env, episode)
        response = await host.current_adapter.aexecute(prompt, prompt_file=str(env.prompt_file))
        if response.success and len(response.output) > RALPH_MIN_OUTPUT:
            host.context_manager.update_context(response.output)
        episode.iterations = iteration
        if env.done:
            episode.success = True
            return


def _measure_context(prompt: str, env: TaskEnvironment, episode: Episode) -> None:
    """Relevance (injected items holding an answer the current step needs / injected items),
    utilization (injected tokens / budget), the items and whether a hazard's wrong answer
    was pushed as fact, for this iteration's injected section."""
    _, heading, section = prompt.partition(CONTEXT_HEADING)
    if not heading:
        episode.utilization.append(0.0)
        episode.injected_tokens.append(0)
        episode.injected_items.append(0)
        episode.useful_items.append(0)
        return
    blocks = [f"### [{b}" for b in section.split("\n### [")[1:] if b.strip()]
    answers = [f.answer for f in env.needed()]
    useful = sum(any(a in block for a in answers) for block in blocks)
    episode.relevance.append(useful / len(blocks) if blocks else 0.0)
    episode.injected_items.append(len(blocks))
    episode.useful_items.append(useful)
    wrong = [h.answer for h in env.task.hazards if h.answer]
    if any(pushed_as_fact(block, wrong) for block in blocks):
        episode.hazard_pushed += 1
    tokens = estimate_tokens(heading + section)
    episode.utilization.append(tokens / CONTEXT_TOKENS)
    episode.injected_tokens.append(tokens)


def _count_recoveries(env: TaskEnvironment, episode: Episode) -> None:
    events = env.events
    for index, event in enumerate(events):
        if event.outcome is not Outcome.ERROR:
            continue
        episode.errors += 1
        later = events[index + 1 : index + 1 + RECOVERY_WINDOW]
        if any(e.outcome is Outcome.STEP_DONE and e.step == event.step for e in later):
            episode.recovered += 1
