"""``ralph-context studio``: bring a Project Studio database into project memory.

``studio import`` reads the file first (read-only, before any model loads) and refuses a
missing or malformed one with exit 2, naming the path it looked at and what chose it
(``--db``, ``$STUDIO_DB_PATH``, or the default ``./studio.db``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console
from rich.table import Table

from ralph_context.cli.base import GLOBAL, App, ConfigOption, LogOption
from ralph_context.cli.output import err, fail, start_logging
from ralph_context.config import Settings
from ralph_context.errors import ConfigError, InvalidInput, RalphContextError

__all__ = ["STUDIO_ENV", "studio_app"]

STUDIO_ENV = "STUDIO_DB_PATH"
DEFAULT_DB = Path("studio.db")

studio_app = App(
    help="Project Studio: import its projects, cycles, learnings and decisions.",
    no_args_is_help=True,
)


def _locate(db: Path | None) -> tuple[Path, str]:
    """The database path and what chose it, for the message when it is missing."""
    if db is not None:
        return db, "from --db"
    from_env = os.environ.get(STUDIO_ENV)
    if from_env:
        return Path(from_env), f"from ${STUDIO_ENV}"
    return DEFAULT_DB, f"the default; neither --db nor ${STUDIO_ENV} was set"


@studio_app.command("import")
def import_db(
    db: Annotated[
        Path | None,
        typer.Option(
            "--db", help=f"The Studio SQLite file (default: ${STUDIO_ENV}, then ./studio.db)."
        ),
    ] = None,
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    log_level: LogOption = None,
) -> None:
    """Import (upsert by id) a Studio database; the file is opened read-only."""
    from ralph_context.engine import Engine
    from ralph_context.packs.project.studio import ImportReport, import_studio, read_studio

    start_logging(log_level)
    path, source = _locate(db)
    if not path.is_file():
        raise fail(
            f"no Project Studio database at {path.resolve()} ({source}); pass --db PATH or "
            f"set {STUDIO_ENV} to the studio.db file",
            2,
        )
    try:
        data = read_studio(path)
        settings = Settings.load(config if config is not None else GLOBAL.config)
    except (ConfigError, InvalidInput) as exc:
        raise fail(str(exc), 2) from None

    async def work() -> ImportReport:
        async with Engine(settings) as engine:
            return await import_studio(engine, data)

    try:
        report = anyio.run(work)
    except RalphContextError as exc:
        raise fail(str(exc), 1) from None
    for note in report.notes:
        err.print(f"note: {note}", highlight=False, soft_wrap=True)
    if as_json:
        payload = {
            "db": str(path.resolve()),
            "tables": {kind: count.__dict__ for kind, count in report.tables.items()},
            "embedded": report.embedded,
            "notes": report.notes,
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    table = Table("table", "read", "added", "updated", title=f"imported {path}")
    for kind, count in report.tables.items():
        table.add_row(kind, str(count.read), str(count.added), str(count.updated))
    Console().print(table)
