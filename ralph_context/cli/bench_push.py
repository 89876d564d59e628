"""``ralph-context bench push``: the push gate's held-out precision, recall and silence per
kind of data (``benchmarks/push``), in a module of its own beside ``bench``'s others."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
import typer

from ralph_context.cli.base import ConfigOption, LogOption
from ralph_context.cli.bench_report import NO_BENCHMARKS, progress_bar, report, use_config
from ralph_context.cli.output import fail, start_logging
from ralph_context.errors import RalphContextError

__all__ = ["push"]


def push(
    locomo: Annotated[
        Path | None,
        typer.Option(help="LoCoMo JSON (its adversarial category is the no-answer kind)."),
    ] = None,
    longmemeval: Annotated[
        Path | None,
        typer.Option(
            help="A LongMemEval file: one store filled per question (~40 s each on a quiet "
            "2-core machine); its _abs questions are the no-answer kind."
        ),
    ] = None,
    longmemeval_pools: Annotated[
        Path | None,
        typer.Option(
            help="Instead of --longmemeval: the candidate pools `bench retrieval` saved on "
            "its file (longmemeval_pools.pkl), replayed as the engine ranks them."
        ),
    ] = None,
    reuse: Annotated[
        Path | None,
        typer.Option(help="An asked.jsonl an earlier run wrote: fit and grade again only."),
    ] = None,
    out: Annotated[
        Path, typer.Option(help="Folder for results.json/.md, asked.jsonl and push.png.")
    ] = Path("benchmarks/push/out"),
    conversations: Annotated[
        int | None, typer.Option(min=1, help="Only the first N LoCoMo conversations.")
    ] = None,
    questions: Annotated[
        int | None,
        typer.Option(
            min=1, help="Only the first N questions (of each conversation; of LongMemEval)."
        ),
    ] = None,
    projects: Annotated[
        int | None,
        typer.Option(min=1, help="Only the first N project stores (paraphrase and everyday)."),
    ] = None,
    loops: Annotated[
        int | None,
        typer.Option(
            min=0, help="Only the first N tasks of bench ab's suite run as loops (0: none)."
        ),
    ] = None,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Held-out push precision, recall and silence on no-answer prompts, per kind of data
    (everyday coding prompts, the paraphrase set, LoCoMo, LongMemEval; and Ralph's loops,
    which the prompt gate is not fitted on), beside what a push carried before the gate;
    the constants fitted on all."""
    use_config(config)
    start_logging(log_level)
    try:
        from benchmarks.push.report import markdown, write_outputs
        from benchmarks.push.run import Plan, evaluate
        from benchmarks.push.run import reuse as refit
    except ImportError:
        raise fail(NO_BENCHMARKS) from None
    if reuse is not None:
        report(refit(reuse), out, write_outputs, markdown)
        return
    plan = Plan(
        locomo=locomo,
        longmemeval=longmemeval,
        longmemeval_pools=longmemeval_pools,
        conversations=conversations,
        questions=questions,
        projects=projects,
        loops=loops,
    )
    with progress_bar("prompts") as start:
        try:
            results = anyio.run(lambda: evaluate(plan, progress=start))
        except (ValueError, OSError, RalphContextError) as exc:
            raise fail(str(exc)) from None
    report(results, out, write_outputs, markdown)
