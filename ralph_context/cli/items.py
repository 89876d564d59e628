"""``ralph-context store``, ``search``, ``forget`` and ``demo``: items one at a time.

Each command checks its arguments as the engine will before it loads the model and opens the
store (seconds), so a typo is refused at once with exit 2. Beside a server that holds the
store (``remote``), ``store``, ``search`` and ``forget`` are its MCP tools' calls, printed as
they print without one: before, ``store`` and ``forget`` exited 1 with "open for writing by
process ..." for as long as a server ran (the agents' shared one for 30 idle minutes).
``forget --id`` without a server opens the store without the model (``engine.no_model``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ralph_context.arguments import MAX_ITEMS, MIN_SCORE_HELP, NewItem, build_item, check_query
from ralph_context.cli.base import ConfigOption, JsonOption, LogOption
from ralph_context.cli.engine import checked, engine_for, reader_for, reported, run
from ralph_context.cli.output import emit_json, fail, load_settings, out
from ralph_context.cli.remote import Served, call_tool, served
from ralph_context.lifecycle.forgetting import check_selection
from ralph_context.metadata_filter import parse_condition
from ralph_context.models import ContextType, RetrievalResult
from ralph_context.validation import check_source

__all__ = ["demo", "forget", "print_result", "result_payload", "search", "store"]


def result_payload(result: RetrievalResult) -> dict[str, Any]:
    """The ``--json`` shape of a search: ``get_relevant_context``'s answer (items best
    first, each ``{item, score, breakdown, tokens}``; ``stats`` with the tier), so a script
    reads the command and the MCP tool alike."""
    from ralph_context.server.schemas import ContextAnswer, SearchStats

    answer = ContextAnswer(items=list(result.items), stats=SearchStats.of(result))
    return answer.model_dump(mode="json")


def print_result(answer: dict[str, Any]) -> None:
    """A search's answer (:func:`result_payload`'s shape) as a table."""
    stats = answer["stats"]
    table = Table(title=f"{len(answer['items'])} item(s) · tier [bold]{stats['tier']}[/]")
    for column in ("score", "type", "content", "tags", "id"):
        table.add_column(column, overflow="fold")
    for hit in answer["items"]:
        item = hit["item"]
        content = str(item["content"])
        table.add_row(
            f"{hit['score']:.3f}",
            item["content_type"],
            content if len(content) <= 200 else content[:200] + "…",
            ", ".join(item["tags"]),
            item["id"],
        )
    out.print(table)
    if stats["degraded_reason"]:
        out.print(f"[yellow]degraded:[/] {stats['degraded_reason']}", highlight=False)
    out.print(
        f"query embedding {stats['query_embedding_time_ms']:.1f} ms · search "
        f"{stats['search_time_ms']:.1f} ms · {stats['total_candidates']} candidates"
    )


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
        typer.Option(
            min=0,
            help="Iteration it belongs to (default: the one in progress, one past the "
            "latest recorded; at most lifecycle.max_iteration_step past the latest).",
        ),
    ] = None,
    thread: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="The conversation, session or task it belongs to (default: cli). Items "
            "of one thread and iteration stored one after another are found through "
            "each other.",
        ),
    ] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    log_level: LogOption = None,
) -> None:
    """Store one item; prints its id."""
    settings = load_settings(config, log_level)
    try:
        meta = json.loads(metadata) if metadata is not None else None
    except ValueError as exc:
        raise fail(f"--metadata is not valid JSON: {exc}", 2) from None
    if thread is not None:
        checked(lambda: check_source(thread, name="--thread", empty=False))
    # Checked as the engine will check it, before the model and the store load (seconds);
    # how far past the latest iteration it may be, the engine says once the store is open.
    entry = NewItem(text, type_, tag, meta, "cli" if thread is None else thread, iteration)
    checked(lambda: build_item(entry, max_bytes=settings.storage.max_content_bytes, iteration=0))

    server = served(settings)
    stored = None if server is None else reported(lambda: _store_on(server, entry))

    async def work() -> dict[str, Any]:
        async with engine_for(settings) as engine:
            (item,) = await engine.store_many([entry])
            return {"id": item.id, "tier": engine.health().tier.value}

    if stored is None:
        stored = run(work)
    if as_json:
        emit_json(stored)
    else:
        out.print(f"stored [bold]{stored['id']}[/] (tier {stored['tier']})", highlight=False)


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
    settings = load_settings(config, log_level)
    conditions = checked(lambda: [parse_condition(text) for text in where or ()])
    # Checked as the engine will check them, before the model and the store load.
    checked(
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

    server = served(settings)
    if server is not None:
        arguments: dict[str, Any] = {"query": query, "tags": tag}
        if limit is not None:
            arguments["max_items"] = limit
        if type_:
            arguments["context_types"] = [kind.value for kind in type_]
        if min_score is not None:
            arguments["min_score"] = min_score
        if conditions:
            arguments["metadata"] = [c.model_dump(mode="json") for c in conditions]
        answer = reported(lambda: call_tool(server, "get_relevant_context", arguments))
        if answer is not None:
            _show(answer, as_json)
            return

    async def work() -> RetrievalResult:
        async with reader_for(settings) as engine:
            return await engine.search(
                query,
                max_items=limit,
                context_types=type_,
                min_score=min_score,
                tags=tag,
                metadata=conditions,
            )

    _show(result_payload(run(work)), as_json)


def _store_on(server: Served, entry: NewItem) -> dict[str, Any] | None:
    """``store_context`` on ``server``, as ``store`` prints it (with the tier its health
    says); ``None`` when nothing answers there any more."""
    arguments: dict[str, Any] = {
        "content": entry.content,
        "context_type": ContextType(entry.content_type).value,
        "tags": list(entry.tags or ()),
        "metadata": entry.metadata,
        "thread": entry.source,
        "iteration": entry.iteration,
    }
    answer = call_tool(server, "store_context", arguments)
    if answer is None:
        return None
    health = call_tool(server, "health_check", {}) or {}
    return {"id": answer["id"], "tier": health.get("tier", "unknown")}


def _show(answer: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(answer)
    else:
        print_result(answer)


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
        typer.Option(
            "--older-than",
            min=0,
            metavar="ITERATION",
            help="Created before it (alone or with --iteration: those iterations' records too).",
        ),
    ] = None,
    iteration: Annotated[
        list[int] | None,
        typer.Option(
            "--iteration",
            min=0,
            help="Created in this iteration; repeatable. Alone (or with --older-than): the "
            "iteration's record too.",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List; delete nothing.")] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    log_level: LogOption = None,
) -> None:
    """Delete the items the selectors pick (AND-ed), live and archived, for good, and
    rewrite the store's files without them. An iteration record whose error item goes is
    cleared ("[forgotten]")."""
    settings = load_settings(config, log_level)
    checked(lambda: check_selection(item_id, type_, tag, older_than, iteration))

    selectors: dict[str, Any] = {
        "item_ids": item_id,
        "context_types": [kind.value for kind in type_] if type_ else None,
        "tags": tag,
        "older_than_iteration": older_than,
        "iterations": iteration,
        "dry_run": dry_run,
    }
    server = served(settings)
    payload = None
    if server is not None:
        payload = reported(lambda: call_tool(server, "forget_context", selectors))

    async def work() -> dict[str, Any]:
        # The selectors pick by id, type, tag and iteration: nothing to embed, no model.
        async with engine_for(settings, model=False) as engine:
            report = await engine.forget(
                item_ids=item_id,
                context_types=type_,
                tags=tag,
                older_than_iteration=older_than,
                iterations=iteration,
                dry_run=dry_run,
            )
        return {
            "dry_run": report.dry_run,
            "count": report.count,
            "item_ids": list(report.item_ids),
            "iterations": list(report.iterations),
            "cleared_iterations": list(report.cleared_iterations),
            "purged": report.purged,
            "versions_removed": report.versions_removed,
            "finished_earlier": report.finished_earlier,
        }

    if payload is None:
        payload = run(work)
    if as_json:
        emit_json(payload)
        return
    verb = "would forget" if dry_run else "forgot"
    out.print(f"{verb} {payload['count']} item(s)", highlight=False)
    for forgotten in payload["item_ids"]:
        out.print(f"  {forgotten}", highlight=False)
    if payload["iterations"]:
        numbers = ", ".join(str(n) for n in payload["iterations"])
        out.print(f"{verb} the record(s) of iteration(s) {numbers}", highlight=False)
    if payload["cleared_iterations"]:
        numbers = ", ".join(str(n) for n in payload["cleared_iterations"])
        out.print(f"cleared the record(s) of iteration(s) {numbers}", highlight=False)
    # A server finishes an unfinished forget when it opens the store: never one here.
    if payload.get("finished_earlier"):
        out.print("finished an earlier forget that had not", highlight=False)
    if payload["purged"]:
        out.print(
            "purged the store's files of deleted rows "
            f"({payload['versions_removed']} old version(s) of the items removed)",
            highlight=False,
        )


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


def demo(
    keep: Annotated[
        Path | None, typer.Option(help="Keep the demo store in this directory.")
    ] = None,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Store a few items, reopen the store, search it, and show which tier answered."""
    settings = load_settings(config, log_level)
    scratch = Path(tempfile.mkdtemp(prefix="ralph-context-demo-")) if keep is None else keep
    settings = settings.with_overrides(
        storage={"backend": "lancedb", "persistence": "project", "path": str(scratch)}
    )

    async def session_one() -> None:
        async with engine_for(settings) as engine:
            for content, kind, tags in DEMO_ITEMS:
                await engine.store(content, kind, tags=tags, source="demo")
            out.print(f"session 1: stored {len(DEMO_ITEMS)} items in {scratch}", highlight=False)

    async def session_two() -> None:
        async with engine_for(settings) as engine:
            out.print(f"session 2: reopened the store, tier {engine.health().tier.value}")
            for query in DEMO_QUERIES:
                out.print(f"\n[bold]query:[/] {query}", highlight=False)
                print_result(result_payload(await engine.search(query, max_items=3)))

    try:
        run(session_one)
        run(session_two)
    finally:
        if keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
