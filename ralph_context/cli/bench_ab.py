"""``ralph-context bench ab``: iterations to finish each task kind, baseline Ralph vs Ralph
with memory, and what memory cost (``benchmarks/ab``), in a module of its own beside
``bench``'s others."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import anyio
import typer

from ralph_context.cli.base import LogOption
from ralph_context.cli.bench_report import NO_BENCHMARKS, progress_bar, report
from ralph_context.cli.output import fail, start_logging
from ralph_context.errors import RalphContextError

__all__ = ["AbAgent", "ab"]


class AbAgent(StrEnum):
    """The agents ``bench ab`` can run."""

    READER = "reader"
    OPENAI = "openai"


def ab(
    suite: Annotated[
        Path | None, typer.Option(help="Task suite (YAML/JSON); default: the shipped suite.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for results and plots.")] = Path(
        "benchmarks/ab/out"
    ),
    quick: Annotated[
        bool, typer.Option(help="One task per kind and per hazard kind, 2 runs each (a smoke).")
    ] = False,
    runs_per_task: Annotated[int, typer.Option(min=1, help="Runs of each task per variant.")] = 10,
    seed: Annotated[int, typer.Option(help="Seeds the order, the noise and the guesses.")] = (
        20261122
    ),
    max_iterations: Annotated[int, typer.Option(min=1, help="A run gives up after this.")] = 60,
    agent: Annotated[
        AbAgent, typer.Option(help="reader (deterministic) or openai (a model endpoint).")
    ] = AbAgent.READER,
    base_url: Annotated[
        str | None, typer.Option(help="openai agent: the endpoint, e.g. http://host/v1.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="openai agent: the model name.")] = None,
    api_key_env: Annotated[
        str, typer.Option(help="openai agent: environment variable holding the key.")
    ] = "OPENAI_API_KEY",
    log_level: LogOption = None,
) -> None:
    """A/B: iterations to finish each task kind, baseline Ralph vs Ralph with memory."""
    start_logging(log_level)
    if agent is AbAgent.OPENAI and not (base_url and model):
        raise fail("--agent openai needs --base-url and --model (the key comes from --api-key-env)")
    try:
        from benchmarks.ab.report import markdown, write_outputs
        from benchmarks.ab.run import DEFAULT_SUITE, Plan, evaluate
        from benchmarks.ab.suite import SuiteError, load_suite
    except ImportError:
        raise fail(NO_BENCHMARKS) from None
    try:
        loaded = load_suite(suite or DEFAULT_SUITE)
    except SuiteError as exc:
        raise fail(str(exc)) from None
    plan = Plan(
        runs_per_task=runs_per_task,
        seed=seed,
        max_iterations=max_iterations,
        quick=quick,
        agent=agent.value,
        base_url=base_url,
        model=model,
        api_key=os.environ.get(api_key_env),
    )
    with progress_bar("episodes") as start:
        try:
            results = anyio.run(lambda: evaluate(loaded, plan, progress=start))
        except RalphContextError as exc:
            raise fail(str(exc)) from None
    report(results, out, write_outputs, markdown)
