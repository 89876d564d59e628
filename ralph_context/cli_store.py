"""``ralph-context stats``, ``health``, ``export``, ``import``, ``reindex`` and ``redact``:
the store as a whole (what it holds, whether it serves, backups and moves, a new embedding
model, secrets stored before redaction).

``stats``, ``health`` and ``export`` only read: beside a running server (which holds the
writer lock) they open the store read-only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ralph_context import namespaces
from ralph_context.cli_app import ConfigOption, JsonOption, LogOption
from ralph_context.cli_engine import engine_for, reader_for, run
from ralph_context.cli_output import emit_json, err, fail, load_settings, out
from ralph_context.errors import RalphContextError

if TYPE_CHECKING:
    from ralph_context.engine import EngineHealth
    from ralph_context.storage.lance_store import StoreStats
    from ralph_context.transfer import TransferReport

__all__ = ["export_", "health", "import_", "redact", "reindex", "stats"]


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
        "write_error": health.write_error,
    }


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

    settings = load_settings(config, log_level)

    async def work() -> TransferReport:
        async with reader_for(settings) as engine:
            with _progress("exported") as tick:
                if str(path) == "-":
                    return await export_store(engine, sys.stdout, vectors=vectors, progress=tick)
                with path.open("w", encoding="utf-8") as out:
                    return await export_store(engine, out, vectors=vectors, progress=tick)

    report = run(work)
    err.print(_transfer_line("exported", report), highlight=False)


def import_(
    path: Annotated[Path, typer.Argument(help="A file `ralph-context export` wrote.")],
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Store what an export wrote; items already in the store are skipped."""
    from ralph_context.transfer import import_store

    settings = load_settings(config, log_level)
    if not path.is_file():
        raise fail(f"{path} is not a file", 2)

    async def work() -> TransferReport:
        async with engine_for(settings) as engine:
            with _progress("imported") as tick, path.open(encoding="utf-8") as lines:
                return await import_store(engine, lines, progress=tick)

    report = run(work)
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


def stats(
    config: ConfigOption = None, as_json: JsonOption = False, log_level: LogOption = None
) -> None:
    """What the store holds: counts by type and state, size, model."""
    settings = load_settings(config, log_level)

    async def work() -> StoreStats:
        async with reader_for(settings) as engine:
            return await engine.stats()

    payload = _stats_payload(run(work))
    if as_json:
        emit_json(payload)
        return
    table = Table(title="store")
    table.add_column("key")
    table.add_column("value", overflow="fold")
    for key, value in payload.items():
        table.add_row(key, json.dumps(value) if isinstance(value, dict) else str(value))
    out.print(table)


def health(
    config: ConfigOption = None, as_json: JsonOption = False, log_level: LogOption = None
) -> None:
    """Per-actor health and the retrieval tier in effect. Exits 1 unless fully semantic
    and writable."""
    settings = load_settings(config, log_level)

    async def work() -> EngineHealth:
        async with reader_for(settings) as engine:
            return engine.health()

    report = run(work)
    payload = _health_payload(report)
    if as_json:
        emit_json(payload)
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
        if report.write_error:
            out.print(f"writes refused: {report.write_error}", highlight=False)
    if not report.ok:
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
    from ralph_context.redact_pass import redact_store

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
