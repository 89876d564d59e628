"""``ralph-context bench soak``: one HTTP server under a sequential client, a few and a
crowd (``benchmarks/soak``): goodput ratio, read latency, refusals and their Retry-After,
lost writes, each phase with the machine's load; in a module of its own beside
``bench``'s others."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ralph_context.cli.base import LogOption
from ralph_context.cli.bench_report import LOCOMO_HINT, NO_BENCHMARKS, report
from ralph_context.cli.output import fail, start_logging

__all__ = ["soak"]


def soak(
    data: Annotated[
        Path | None,
        typer.Option(help="LoCoMo JSON (its turns fill the stores, its questions are asked)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for results.json/.md.")] = Path(
        "benchmarks/soak/out"
    ),
    items: Annotated[int, typer.Option(min=100, help="Items per namespace (three).")] = 10_000,
    clients: Annotated[int, typer.Option(min=0, help="Clients of the soak phase.")] = 8,
    seconds: Annotated[float, typer.Option(min=0, help="The soak phase's seconds.")] = 60.0,
    burst_clients: Annotated[int, typer.Option(min=0, help="Clients of the crowd.")] = 50,
    burst_seconds: Annotated[float, typer.Option(min=0, help="The crowd's seconds.")] = 30.0,
    sequential_seconds: Annotated[
        float, typer.Option(min=0, help="The sequential client's seconds (the baseline).")
    ] = 20.0,
    log_level: LogOption = None,
) -> None:
    """Calls served a second by one sequential client, by 8 and by 50 (the goodput ratio:
    at least 0.8 of the sequential client's), read p99 and the longest served read (at most
    1 s), 429s and their Retry-After, lost writes; the load before and after each phase."""
    start_logging(log_level)
    try:
        from benchmarks.latency.run import DEFAULT_DATA
        from benchmarks.soak.report import markdown, write_outputs
        from benchmarks.soak.run import main, parse
    except ImportError:
        raise fail(NO_BENCHMARKS) from None
    data = data or DEFAULT_DATA
    if not data.is_file():
        raise fail(LOCOMO_HINT.replace("bench retrieval", "bench soak"))
    arguments = parse(
        [
            f"--data={data}",
            f"--items={items}",
            f"--clients={clients}",
            f"--seconds={seconds}",
            f"--burst-clients={burst_clients}",
            f"--burst-seconds={burst_seconds}",
            f"--sequential-seconds={sequential_seconds}",
        ]
    )
    report(main(arguments), out, write_outputs, markdown)
