"""``ralph-context stats``, ``health``, ``export``, ``import``, ``reindex`` and ``redact``:
the store as a whole (what it holds, whether it serves, backups and moves, a new embedding
model, secrets stored before redaction).

``stats`` and ``health`` ask the server that holds the store, when one serves it over HTTP
(``remote``: its figures in a fraction of a second, no model loaded), and ``import`` sends
it the file (``server.import_route``); ``export``, and ``stats`` and ``health`` beside a
server without an endpoint, open the store read-only. Their ``--json`` is the MCP tools'
answer (``get_context_stats``, ``health_check``) either way. Without a server, ``stats``,
``health`` and ``export`` open the store without loading the model (``embeddings.lazy``).
``reindex`` refuses beside a server (it runs on the configured model already).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ralph_context import namespaces
from ralph_context.cli.base import ConfigOption, JsonOption, LogOption
from ralph_context.cli.engine import engine_for, reader_for, reported, run
from ralph_context.cli.integrity import quick_check
from ralph_context.cli.output import emit_json, err, fail, load_settings, out
from ralph_context.cli.remote import Served, call_tool, post_json, served
from ralph_context.config import Settings
from ralph_context.errors import RalphContextError

if TYPE_CHECKING:
    from ralph_context.transfer.export_import import TransferReport

__all__ = ["export_", "health", "import_", "redact", "reindex", "stats"]


def _stats_payload(settings: Settings) -> dict[str, Any]:
    """``get_context_stats``'s answer: the server's, when one holds the store (no model, no
    store opened here), else from the store opened read-only."""
    server = served(settings)
    if server is not None:
        answer = call_tool(server, "get_context_stats", {})
        if answer is not None:
            return answer
    from ralph_context.server.schemas import ContextStats

    async def work() -> dict[str, Any]:
        async with reader_for(settings, model=False) as engine:
            found = await engine.stats()
        return ContextStats.of(found, settings).model_dump(mode="json")

    return run(work)


def _health_payload(settings: Settings) -> dict[str, Any]:
    """``health_check``'s answer, from the server that holds the store or from the store
    opened read-only (as :func:`_stats_payload`)."""
    server = served(settings)
    if server is not None:
        answer = call_tool(server, "health_check", {})
        if answer is not None:
            return answer
    from ralph_context import __version__
    from ralph_context.server.schemas import HealthReport

    async def work() -> dict[str, Any]:
        async with reader_for(settings, model=False) as engine:
            try:
                size: int | None = await engine.size_bytes()
            except RalphContextError:  # the store is down: health says so
                size = None
            report = HealthReport.of(
                engine.health(),
                size_bytes=size,
                max_size_mb=settings.storage.max_size_mb,
                current_iteration=engine.current_iteration,
                version=__version__,
            )
        return report.model_dump(mode="json")

    payload = run(work)
    # The files' quick look (lance's reads) only here: beside a server health stays a
    # thin client of it, and `verify` (which needs no store opened) checks the files.
    folder = settings.store_path()
    if isinstance(folder, Path) and folder.is_dir():
        payload["files"] = quick_check(folder)
    return payload


def export_(
    path: Annotated[Path, typer.Argument(help="The JSON-lines file to write (- for stdout).")],
    vectors: Annotated[
        bool, typer.Option("--vectors/--no-vectors", help="Include the vectors.")
    ] = True,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Write the store (items, archived items, iterations) as JSON lines."""
    from ralph_context.transfer.export_import import export_store

    settings = load_settings(config, log_level)

    async def work() -> TransferReport:
        async with reader_for(settings, model=False) as engine:
            with _progress("exported") as tick:
                if str(path) == "-":
                    return await export_store(engine, sys.stdout, vectors=vectors, progress=tick)
                with path.open("w", encoding="utf-8") as out:
                    return await export_store(engine, out, vectors=vectors, progress=tick)

    report = run(work)
    err.print(_transfer_line("exported", report), highlight=False, soft_wrap=True)
    if report.unreadable:
        err.print(f"could not read {report.lost} row(s) of the store:", highlight=False)
        for part in report.unreadable:
            err.print(f"  {part}", highlight=False, soft_wrap=True)
        raise typer.Exit(1)


def import_(
    path: Annotated[Path, typer.Argument(help="A file `ralph-context export` wrote.")],
    include_forgotten: Annotated[
        bool,
        typer.Option(
            "--include-forgotten",
            help="Also store the items and iteration records a forget deleted (skipped "
            "otherwise: forget is final), and lift their tombstones.",
        ),
    ] = False,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Store what an export wrote; items already in the store, and what a forget deleted
    (unless --include-forgotten), are skipped."""
    from ralph_context.transfer.export_import import import_store

    settings = load_settings(config, log_level)
    if not path.is_file():
        raise fail(f"{path} is not a file", 2)

    async def work() -> TransferReport:
        async with engine_for(settings) as engine:
            with _progress("imported") as tick, path.open(encoding="utf-8") as lines:
                return await import_store(
                    engine, lines, progress=tick, include_forgotten=include_forgotten
                )

    server = served(settings)
    report = (
        None
        if server is None
        else reported(lambda: _import_on(server, path, include_forgotten=include_forgotten))
    )
    if report is None:
        report = run(work)
    line = _transfer_line("imported", report, brought_back=include_forgotten)
    err.print(line, highlight=False, soft_wrap=True)


# Records per request to a server (each a line of JSON: ~4 KB with its vector), and the
# seconds one may take (stored, and embedded again for another model: ~100 items a second).
_CHUNK_LINES = 1000
_CHUNK_WAIT = 600.0


def _import_on(
    server: Served, path: Path, *, include_forgotten: bool = False
) -> TransferReport | None:
    """The file at ``path`` imported by ``server`` (``server.import_route``), the header
    and a chunk of records per request; ``None`` when nothing answers there any more."""
    from ralph_context.transfer.export_import import IMPORT_PATH, TransferReport

    total = TransferReport()
    with _progress("imported") as tick, path.open(encoding="utf-8") as lines:
        header = next(lines, "")
        number = 2
        while chunk := list(islice(lines, _CHUNK_LINES)):
            body = {
                "lines": [header, *chunk],
                "first_line": number,
                "include_forgotten": include_forgotten,
            }
            answer = post_json(server, IMPORT_PATH, body, _CHUNK_WAIT)
            if answer is None:
                return None
            for key, value in answer.items():  # counts add up; export's lists (none) join
                now = getattr(total, key)
                setattr(
                    total, key, now + list(value) if isinstance(now, list) else now + int(value)
                )
            number += len(chunk)
            tick(total.items + total.archived)
        if number == 2:  # a header alone: checked by the server as a file would be
            if post_json(server, IMPORT_PATH, {"lines": [header], "first_line": 2}) is None:
                return None
    return total


@contextmanager
def _progress(verb: str) -> Iterator[Callable[[int], None]]:
    """A progress line on stderr while a transfer runs, on a terminal only (a log or a
    pipe got the spinner's last frame); yields the counter to call."""
    from rich.progress import Progress, SpinnerColumn, TextColumn

    if not err.is_terminal:
        yield lambda done: None
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=err) as bar:
        task = bar.add_task(f"{verb} 0")
        yield lambda done: bar.update(task, description=f"{verb} {done:,}")


def _transfer_line(verb: str, report: TransferReport, *, brought_back: bool = False) -> str:
    forgotten = ""
    if report.forgotten:
        said = "brought back" if brought_back else "skipped: forgotten (--include-forgotten)"
        forgotten = f", {report.forgotten} {said}"
    return (
        f"{verb} {report.items} items, {report.archived} archived, {report.iterations} "
        f"iterations ({report.skipped} already there, {report.embedded} embedded again"
        f"{forgotten})"
    )


def stats(
    config: ConfigOption = None, as_json: JsonOption = False, log_level: LogOption = None
) -> None:
    """What the store holds: counts by type and state, size, model (the running server's
    figures when one holds the store)."""
    settings = load_settings(config, log_level)
    payload = reported(lambda: _stats_payload(settings))
    if as_json:
        emit_json(payload)
        return
    table = Table(title="store")
    table.add_column("key")
    table.add_column("value", overflow="fold")
    for key, value in payload.items():
        shown = json.dumps(value) if isinstance(value, dict | list) else str(value)
        table.add_row(_STATS_LABELS.get(key, key), shown)
    out.print(table)


# Keys whose bare name read as one number twice: "iterations 0" beside "latest_iteration 1"
# (a store's items belong to iteration 1 before any iteration is recorded). --json keeps
# the tool's keys.
_STATS_LABELS = {
    "iterations": "iteration records",
    "latest_iteration": "latest iteration (items or records)",
}


def health(
    config: ConfigOption = None, as_json: JsonOption = False, log_level: LogOption = None
) -> None:
    """Per-actor health and the retrieval tier in effect (the running server's when one
    holds the store), and, read here, what the store's files show of damage (``verify
    --quick``). Exits 1 unless fully semantic, writable and undamaged."""
    settings = load_settings(config, log_level)
    report = reported(lambda: _health_payload(settings))
    files = report.get("files")
    if as_json:
        emit_json(report)
    else:
        title = f"{report['status']} · tier [bold]{report['tier']}[/] · model {report['model_id']}"
        table = Table(title=title)
        for column in ("actor", "state", "restarts", "last error"):
            table.add_column(column, overflow="fold")
        for name, actor in report["actors"].items():
            # An actor left off by configuration has no error: its "last error" only
            # says it is not configured, which the state column says already.
            error = "" if actor["state"] == "not_configured" else actor["last_error"] or ""
            table.add_row(name, actor["state"], str(actor["restarts"]), error)
        out.print(table)
        out.print(f"store: {report['store']}", highlight=False)
        if report.get("write_error"):
            out.print(f"writes refused: {report['write_error']}", highlight=False)
        if files is None:
            out.print(
                "files: not checked beside a server (`ralph-context verify` does)", highlight=False
            )
        for finding in files["findings"] if files else ():
            out.print(f"damaged: {finding['file']}: {finding['problem']}", highlight=False)
    damaged = files is not None and not files["ok"]
    if report["tier"] != "semantic" or report.get("write_error") or damaged:
        raise typer.Exit(1)


def reindex(config: ConfigOption = None, log_level: LogOption = None) -> None:
    """Re-embed every stored item, in every namespace, with the configured model (after
    changing models: a namespace left on the old model would refuse to open)."""
    from ralph_context.embeddings.local import load_embedder
    from ralph_context.storage.reindex import reindex_store

    settings = load_settings(config, log_level)
    if settings.is_ephemeral:
        raise fail("this configuration keeps no persistent store; nothing to reindex", 2)
    root = settings.store_root()
    server = served(settings)
    if server is not None:
        # Not through it: a server that holds the store serves it with the configured
        # model already (a store of another model would not have opened), and a reindex
        # rewrites every vector under the requests it answers.
        raise fail(
            f"the store is served by process {server.note.pid} at {server.url}: stop it to "
            "reindex (it runs on the configured model already)",
            1,
        )
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
        raise fail(str(exc), 1) from None
    out.print(f"re-embedded {count} item(s) with {embedder.model_id}", highlight=False)


def redact(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would change; write nothing.")
    ] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    log_level: LogOption = None,
) -> None:
    """Redact the secrets a store already holds (written before redaction, or with other
    rules): items, archived items and originals, iteration records and the packs' tables
    are rewritten with the current rules, then the old versions are dropped from disk."""
    from ralph_context.transfer.redact import redact_store

    settings = load_settings(config, log_level)

    async def work() -> dict[str, Any]:
        async with engine_for(settings) as engine:
            report = await redact_store(engine, dry_run=dry_run)
        return {
            "dry_run": report.dry_run,
            "items": report.items,
            "archived": report.archived,
            "originals": report.originals,
            "iterations": report.iterations,
            "pack_rows": report.pack_rows,
            "redacted": dict(report.kinds.most_common()),
        }

    payload = run(work)
    if as_json:
        emit_json(payload)
        return
    verb = "would rewrite" if dry_run else "rewrote"
    parts = ", ".join(
        f"{payload[key]} {label}"
        for key, label in (
            ("items", "item(s)"),
            ("archived", "archived item(s)"),
            ("originals", "original(s)"),
            ("iterations", "iteration record(s)"),
            ("pack_rows", "pack row(s)"),
        )
    )
    out.print(f"{verb} {parts}", highlight=False)
    for kind, count in payload["redacted"].items():
        out.print(f"  {kind}: {count}", highlight=False)
