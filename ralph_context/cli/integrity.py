"""``ralph-context verify`` and ``repair``: damage found and contained
(``storage.integrity.checks``, ``storage.integrity.damage``).

``verify`` reads what the store's files can tell (manifests, every referenced file, the
checksums sealed at commit, every fragment's rows and vectors) without opening the store,
so it runs beside a server and on a store too damaged to open; it exits 1 when it finds
anything. ``repair`` makes each damaged table's newest readable version current and says
what the versions after it held; it needs the store's writer lock (stop a server first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ralph_context import namespaces
from ralph_context.cli.base import ConfigOption, JsonOption, LogOption
from ralph_context.cli.output import emit_json, fail, load_settings, out
from ralph_context.config import Settings
from ralph_context.errors import RalphContextError

__all__ = ["quick_check", "repair", "verify"]


def _folders(settings: Settings) -> list[Path]:
    """Every namespace's folder of the configured store."""
    if settings.is_ephemeral:
        raise fail("this configuration keeps no persistent store; nothing to check", 2)
    root = settings.store_root()
    if not isinstance(root, Path):
        raise fail(f"{root} is on object storage: verify and repair read local stores", 2)
    folders = [namespaces.directory(root, name) for name in namespaces.names(root)]
    return [folder for folder in folders if isinstance(folder, Path)]


def quick_check(folder: Path) -> dict[str, Any]:
    """``health``'s look at the store's files: the latest manifests, every referenced file
    there and of its size, the checksums of files changed since they were sealed."""
    from ralph_context.storage.integrity.checks import check_store

    return check_store(folder).as_dict()


def verify(
    quick: Annotated[
        bool, typer.Option("--quick", help="Only what health checks (no full read).")
    ] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    log_level: LogOption = None,
) -> None:
    """Check the store's files for damage: every manifest, every referenced file present
    and of its size and checksum, every fragment readable with its rows, every vector
    finite, of the model's dimension and of unit length. Exits 1 if anything is wrong."""
    from ralph_context.storage.integrity.checks import check_store
    from ralph_context.storage.meta import StoreRecord

    settings = load_settings(config, log_level)
    reports = []
    for folder in _folders(settings):
        record = StoreRecord.read(folder)
        dimension = record.dimension if record else None
        reports.append(check_store(folder, deep=not quick, dimension=dimension).as_dict())
    if as_json:
        emit_json(reports)
    else:
        for report in reports:
            _show(report)
    if any(not report["ok"] for report in reports):
        raise typer.Exit(1)


def _show(report: dict[str, Any]) -> None:
    verdict = "ok" if report["ok"] else f"{len(report['findings'])} problem(s)"
    counts = f"{report['tables']} tables, {report['files']} files ({report['hashed']} hashed"
    if report["unsealed"]:
        counts += f", {report['unsealed']} committed before checksums were kept"
    counts += ")"
    if report["deep"]:
        counts += f", {report['rows']} rows, {report['vectors']} vectors read"
    out.print(f"{report['folder']}: {verdict}: {counts}", highlight=False)
    for finding in report["findings"]:
        out.print(f"  {finding['file']}: {finding['problem']}", highlight=False)


def repair(
    config: ConfigOption = None, as_json: JsonOption = False, log_level: LogOption = None
) -> None:
    """Make each damaged table's newest readable version current (the unreadable manifests
    move to damaged/ in the store's folder) and report what the lost versions held; commit
    each table without the fragments whose data files are gone, and report their rows."""
    from ralph_context.storage.integrity.damage import repair as repair_store

    settings = load_settings(config, log_level)
    try:
        reports = [repair_store(folder).as_dict() for folder in _folders(settings)]
    except RalphContextError as exc:
        raise fail(str(exc), 1) from None
    if as_json:
        emit_json(reports)
        return
    for report in reports:
        if not report["repaired"] and not report["dropped"]:
            out.print(f"{report['folder']}: nothing to repair", highlight=False)
        for gone in report["dropped"]:
            out.print(
                f"{report['folder']}/{gone['table']}: version {gone['version']} leaves out "
                f"{len(gone['fragments'])} fragment(s) whose files are gone "
                f"({gone['rows']} row(s) lost): {', '.join(gone['files'])}",
                highlight=False,
            )
        for lost in report["repaired"]:
            versions = ", ".join(str(n) for n in lost["lost_versions"])
            out.print(
                f"{report['folder']}/{lost['table']}: version {lost['current']} is current; "
                f"lost version(s) {versions}",
                highlight=False,
            )
            for held in lost["files"]:
                what = held.get("unreadable") or f"{held['rows']} row(s)"
                ids = f": ids {', '.join(held['ids'])}" if held.get("ids") else ""
                out.print(f"  {held['file']}: {what}{ids}", highlight=False)
