"""``ralph-context bench``: the benchmark harnesses, run from a source checkout (the
repository's ``benchmarks/`` package: task suites and plots, not product code, not in the
wheel), imported lazily, with a word on getting it if missing."""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Annotated

import anyio
import typer

from ralph_context.cli.base import App, ConfigOption, LogOption
from ralph_context.cli.bench_ab import ab
from ralph_context.cli.bench_push import push
from ralph_context.cli.bench_report import (
    LOCOMO_HINT,
    NO_BENCHMARKS,
    NO_BM25,
    progress_bar,
    report,
    use_config,
)
from ralph_context.cli.bench_soak import soak
from ralph_context.cli.output import err, fail, start_logging
from ralph_context.errors import RalphContextError
from ralph_context.object_location import ObjectLocation

__all__ = ["bench_app"]


bench_app = App(help="Benchmarks: A/B loops, recall, pushes, latency, load, the console.")
bench_app.command("push")(push)
bench_app.command("soak")(soak)
bench_app.command("ab")(ab)


@bench_app.command("retrieval")
def retrieval(
    data: Annotated[
        Path | None,
        typer.Option(
            help="LoCoMo JSON: locomo10.json from github.com/snap-research/LoCoMo, or a split; "
            "or a LongMemEval file (a JSON list, plain or gzipped), recognised by its content."
        ),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            help="Folder for results.json/.md and recall.png (LongMemEval: longmemeval.json/.md "
            "and longmemeval_pools.pkl, the candidate pools for the weight fit)."
        ),
    ] = Path("benchmarks/retrieval/out"),
    conversations: Annotated[
        int | None, typer.Option(min=1, help="Only the first N conversations.")
    ] = None,
    questions: Annotated[
        int | None,
        typer.Option(min=1, help="Only the first N questions of each (LongMemEval: of the file)."),
    ] = None,
    scenarios: Annotated[
        int, typer.Option(min=0, help="Loop-scenario queries per kind (5 kinds; 0: none).")
    ] = 48,
    paraphrases: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Paraphrase-set queries per project, answerable and absent each (default: "
            "all; 0: none).",
        ),
    ] = None,
    over_mcp: Annotated[
        bool,
        typer.Option(
            "--over-mcp",
            help="Also store and ask LoCoMo through a real server over MCP stdio, in threads, "
            "with defaults: the default_mcp row (minutes more).",
        ),
    ] = False,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Evidence recall@5/10/25/50 on LoCoMo, recall/MRR on the loop scenarios and top-k on
    the paraphrase set, per mode (default, vector, text, hybrid, served); on a LongMemEval
    file, its turn and session recall per mode and baseline instead (--conversations,
    --scenarios and --paraphrases do not apply). ``--config``: the model and settings measured."""
    use_config(config)
    start_logging(log_level)
    if data is None:
        raise fail(LOCOMO_HINT)
    try:
        from benchmarks.retrieval.longmemeval import is_longmemeval
    except ImportError:
        raise fail(NO_BENCHMARKS) from None
    if is_longmemeval(data):
        _longmemeval(data, out, questions)
        return
    try:
        from benchmarks.retrieval.locomo import LocomoFormatError
        from benchmarks.retrieval.run import evaluate, markdown, write_outputs
    except ImportError:
        raise fail(NO_BENCHMARKS) from None
    with progress_bar("questions") as start:
        try:
            results = anyio.run(
                lambda: evaluate(
                    data,
                    conversations=conversations,
                    questions=questions,
                    progress=start,
                    scenarios=scenarios,
                    paraphrases=paraphrases,
                    over_mcp=over_mcp,
                )
            )
        except (LocomoFormatError, RalphContextError) as exc:
            raise fail(str(exc)) from None
    report(results, out, write_outputs, markdown)


def _longmemeval(data: Path, out: Path, questions: int | None) -> None:
    """``bench retrieval`` on a LongMemEval file: longmemeval.json/.md in ``out``."""
    try:
        from benchmarks.retrieval.longmemeval import LongMemEvalFormatError
        from benchmarks.retrieval.longmemeval_report import longmemeval_markdown, write_outputs
        from benchmarks.retrieval.longmemeval_run import evaluate
    except ModuleNotFoundError as exc:
        if exc.name == "rank_bm25":
            raise fail(NO_BM25) from None
        raise fail(NO_BENCHMARKS) from None
    with progress_bar("questions") as start:
        try:
            pools = out / "longmemeval_pools.pkl"
            run = partial(evaluate, data, questions=questions, progress=start, pools_out=pools)
            results = anyio.run(run)
        except (LongMemEvalFormatError, RalphContextError) as exc:
            raise fail(str(exc)) from None
    report(results, out, write_outputs, longmemeval_markdown)


@bench_app.command("latency")
def latency(
    data: Annotated[
        Path | None,
        typer.Option(
            help="LoCoMo JSON (its turns fill the stores, its questions are the queries)."
        ),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for results.json/.md and latency.png.")] = Path(
        "benchmarks/latency/out"
    ),
    items: Annotated[
        str, typer.Option(help="Comma-separated store sizes, e.g. 10000,100000,1000000.")
    ] = "10000,100000",
    queries: Annotated[int, typer.Option(min=10, help="Queries per face and size.")] = 300,
    iterations: Annotated[
        int, typer.Option(min=10, help="Hook iterations per mode (retrieval, loop).")
    ] = 250,
    agent_ms: Annotated[
        float, typer.Option(min=0, help="The agent's own time per loop iteration (a sleep).")
    ] = 200.0,
    quick: Annotated[
        bool, typer.Option(help="One 5,000-item store, 40 queries, 30 iterations (CI smoke).")
    ] = False,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Latency of every face on the same stores: the floor (raw model and LanceDB),
    Engine.search, MCP over stdio and HTTP (1 and 8 clients), the Ralph hook alone and in a
    loop with the lifecycle on; RSS, store size, MCP ingest rates. ``--config``: the model
    and settings measured."""
    use_config(config)
    start_logging(log_level)
    if data is None:
        raise fail(LOCOMO_HINT.replace("bench retrieval", "bench latency"))
    try:
        sizes = [int(part) for part in items.split(",") if part.strip()]
    except ValueError:
        raise fail(f"--items must be comma-separated integers, got {items!r}") from None
    if not sizes or min(sizes) < 1_000:
        raise fail(f"--items needs store sizes of at least 1000, got {items!r}")
    if quick:
        sizes, queries, iterations = [5_000], 40, 30
    try:
        from benchmarks.latency.suite import markdown, measure, write_outputs
    except ImportError:
        raise fail(NO_BENCHMARKS) from None
    with progress_bar("phases") as start:
        results = anyio.run(
            lambda: measure(
                data,
                sizes=sizes,
                queries=queries,
                hook_iterations=iterations,
                agent_ms=agent_ms,
                ingest_texts=128 if quick else 512,
                progress=start,
            )
        )
    report(results, out, write_outputs, markdown)
    if results["failed"]:  # written all the same, but the run is not whole
        raise fail(
            f"bench latency: {len(results['failed'])} phase(s) failed (results.md names them)", 1
        )


@bench_app.command("replicas")
def replicas(
    data: Annotated[
        Path | None,
        typer.Option(help="LoCoMo JSON (its turns fill the store, its questions are searched)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for results.json and results.md.")] = Path(
        "benchmarks/replicas/out"
    ),
    store: Annotated[
        str | None,
        typer.Option(
            help="An empty prefix on object storage (s3://bucket/prefix, credentials from the "
            "environment); default: a local S3 endpoint (moto_server) started for the run."
        ),
    ] = None,
    items: Annotated[int, typer.Option(min=1_000, help="Items in the searched store.")] = 100_000,
    queries: Annotated[int, typer.Option(min=8, help="Questions searched per store (twice).")] = 50,
    writes: Annotated[
        int, typer.Option(min=1, help="Items each of a replica's two clients writes, timed.")
    ] = 40,
    visibility: Annotated[int, typer.Option(min=2, help="Writes timed until seen elsewhere.")] = 30,
    log_level: LogOption = None,
) -> None:
    """A store on object storage shared by replicas: search p50/p99 beside the local store
    (cold and warm), write throughput with 1, 2 and 4 replicas (lost, duplicated), and how
    long a write takes to be found on another replica."""
    start_logging(log_level)
    if data is None:
        raise fail(LOCOMO_HINT.replace("bench retrieval", "bench replicas"))
    try:
        from benchmarks.replicas.endpoint import Endpoint, local_endpoint
        from benchmarks.replicas.run import markdown, measure, write_outputs
    except ImportError:
        raise fail(NO_BENCHMARKS) from None
    try:
        remote = ObjectLocation(store) if store is not None else None
    except ValueError as exc:
        raise fail(f"--store: {exc}") from None
    with ExitStack() as stack, progress_bar("phases") as start:
        try:
            if remote is not None:
                endpoint = Endpoint(remote)
            else:
                logs = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                endpoint = stack.enter_context(local_endpoint(logs / "moto-requests.log"))
        except RuntimeError as exc:
            raise fail(str(exc)) from None
        results = anyio.run(
            lambda: measure(
                data,
                endpoint=endpoint,
                items=items,
                queries=queries,
                per_client=writes,
                visibility_writes=visibility,
                progress=start,
            )
        )
    report(results, out, write_outputs, markdown)


@bench_app.command("console")
def console(
    data: Annotated[
        Path | None,
        typer.Option(help="LoCoMo JSON (its turns fill the store, its questions are searched)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for results.json and results.md.")] = Path(
        "benchmarks/console/out"
    ),
    items: Annotated[int, typer.Option(min=1_000, help="Items in the store.")] = 10_000,
    iterations: Annotated[int, typer.Option(min=1, help="Iteration results recorded.")] = 100,
    requests: Annotated[int, typer.Option(min=5, help="Timed requests per page.")] = 30,
    log_level: LogOption = None,
) -> None:
    """Server time of every console page (search, items, item, iterations, health) against
    a store of --items, through a real server; target 300 ms a page."""
    start_logging(log_level)
    if data is None:
        raise fail(LOCOMO_HINT.replace("bench retrieval", "bench console"))
    try:
        from benchmarks.console.run import markdown, measure, write_outputs
    except ImportError:
        raise fail(NO_BENCHMARKS) from None
    results = measure(data, items=items, iterations=iterations, requests=requests)
    report(results, out, write_outputs, markdown)


@bench_app.command("peer")
def peer(
    data: Annotated[
        Path | None,
        typer.Option(help="LoCoMo JSON (its turns fill both servers, its questions are asked)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for results.json and results.md.")] = Path(
        "benchmarks/peer/results"
    ),
    questions: Annotated[
        int | None,
        typer.Option(
            min=1, help="Ask only N questions, taken in turn from each conversation (smoke run)."
        ),
    ] = None,
    peer_venv: Annotated[
        Path | None,
        typer.Option(
            help="The peer's venv: made and mcp-server-qdrant 0.8.1 installed from the package "
            "index if missing, reused if present (default: ~/.cache/ralph-context/peer-venv)."
        ),
    ] = None,
    log_level: LogOption = None,
) -> None:
    """Side by side with mcp-server-qdrant 0.8.1 over MCP stdio, both on our model files
    (vectors checked identical): LoCoMo recall@10, p50/p99 per call, server CPU per call,
    ingest time and disk, with the machine's load."""
    start_logging(log_level)
    if data is None:
        raise fail(LOCOMO_HINT.replace("bench retrieval", "bench peer"))
    try:
        from benchmarks.peer.model_files import ModelFilesError
        from benchmarks.peer.report import markdown, write_outputs
        from benchmarks.peer.run import measure
        from benchmarks.peer.venv import PeerInstallError, default_venv
        from benchmarks.retrieval.locomo import LocomoFormatError
        from benchmarks.retrieval.over_mcp import ToolFailed
    except ImportError:
        raise fail(NO_BENCHMARKS) from None
    with progress_bar("questions") as start:
        try:
            results = measure(
                data,
                questions=questions,
                venv=peer_venv or default_venv(),
                progress=start,
                say=lambda line: err.print(line, markup=False, highlight=False),
            )
        except (LocomoFormatError, PeerInstallError, ModelFilesError, ToolFailed) as exc:
            raise fail(str(exc)) from None
    report(results, out, write_outputs, markdown)
