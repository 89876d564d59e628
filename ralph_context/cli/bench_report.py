"""What every ``ralph-context bench`` command shares: how to say the harnesses are missing,
a progress bar on stderr, and a harness's report (its files written, its table shown)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ralph_context.cli.output import err

__all__ = ["LOCOMO_HINT", "NO_BENCHMARKS", "NO_BM25", "progress_bar", "report", "use_config"]

NO_BENCHMARKS = (
    "the benchmarks package is not importable: run from a source checkout of ralph-context "
    "(bash .ci/setup installs it in editable mode)"
)
LOCOMO_HINT = (
    "bench retrieval needs --data: a LoCoMo JSON file (locomo10.json from "
    "https://github.com/snap-research/LoCoMo, data/ folder, CC BY-NC 4.0; or a split of it)"
)
NO_BM25 = (
    "the LongMemEval bench's BM25 baseline needs rank-bm25: pip install 'ralph-context[bench]'"
)


def report(
    results: dict[str, Any],
    out: Path,
    write_outputs: Callable[[dict[str, Any], Path], list[Path]],
    markdown: Callable[[dict[str, Any]], str],
) -> None:
    """Write a harness's files and show its table."""
    paths = write_outputs(results, out)
    err.print(markdown(results), highlight=False)
    err.print("wrote " + ", ".join(str(p) for p in paths))


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int], Callable[[], None]]]:
    """A rich bar on stderr; yields ``start(total) -> tick``."""
    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )

    def start(total: int) -> Callable[[], None]:
        task = bar.add_task(label, total=total)
        return lambda: bar.advance(task)

    with bar:
        yield start


def use_config(config: Path | None) -> None:
    """Make ``config`` the file every setting of this run comes from: the benchmarks build
    their stores' settings with ``Settings.load(None)``, which reads
    ``$RALPH_CONTEXT_CONFIG`` (so ``embeddings.model`` there picks the model measured)."""
    if config is not None:
        os.environ["RALPH_CONTEXT_CONFIG"] = str(config.resolve())
