"""A store whose latest version cannot be read: served at the newest one that can, and
``repair`` to make that one current.

Measured before (issue 62): a truncated latest manifest took the whole store down with a
raw ``LanceError(IO): file size is too small`` naming no file, though dropping that
manifest by hand recovered 751 of 755 items. LanceDB reads the latest manifest to open a
table even when asked for an older version, so the store is opened through a *view*: a
temporary folder of symbolic links to the store's files, in which each damaged table's
``_versions`` lists only the manifests up to its newest readable one. Nothing in the store
changes; the view is read-only by construction (the store opened on it is read-only).

``repair`` changes the store, holding its writer lock: the unreadable manifests (and the
version hint that names them) move to ``damaged/<when>/`` in the store's folder, kept
for whoever wants to look, so each table's newest readable version is its latest again.
It reports what the lost versions held: the data files no readable version references,
with their rows and item ids where they can still be read.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lance
import pyarrow.compute as pc
from lance.file import LanceFileReader

from ralph_context._logging import get_logger
from ralph_context.errors import StoreDamaged, StoreError
from ralph_context.storage import writer_lock
from ralph_context.storage.integrity.checks import (
    Versions,
    check_store,
    data_files,
    manifests,
    tables,
    versions,
)

__all__ = [
    "Lost",
    "RepairReport",
    "counted",
    "damaged",
    "highest",
    "lance_error",
    "raise_if_damaged",
    "readable_view",
    "repair",
]

log = get_logger("ralph_context.storage")

DAMAGED = "damaged"
_HINT = "latest_version_hint.json"
# Ids of a lost data file listed at most.
_SHOWN_IDS = 20


def damaged(folder: Path) -> list[Versions]:
    """The store's tables whose latest version cannot be read (a manifest read each)."""
    return [found for table in tables(folder) if (found := versions(table)).broken]


def lance_error(exc: BaseException) -> bool:
    """An error LanceDB or Lance raised (a damaged file among them), not one of ours: the
    store's open then looks for damage (:func:`raise_if_damaged`)."""
    return isinstance(exc, Exception) and not isinstance(exc, StoreError)


def counted(damaged: bool, count: Callable[[], int]) -> int:
    """``count()``, or 0 on a store opened ``damaged`` whose files cannot give it (its open
    must not fail on a count: export salvages what can be read)."""
    try:
        return int(count())
    except Exception as exc:
        if not damaged:
            raise
        log.warning("store_count_unreadable", error=str(exc).split(", /", 1)[0])
        return 0


def highest(table: Any, column: str) -> int:
    """The highest value of an integer ``column`` of ``table`` (0 when empty)."""
    if not table.count_rows():
        return 0
    values = table.search().select([column]).limit(None).to_arrow().column(column)
    return int(pc.max(values).as_py() or 0)


def raise_if_damaged(folder: Path) -> None:
    """Called when the store failed to open: if its files show damage (``integrity``'s
    quick check: a latest manifest unreadable, a file missing or of another size or
    checksum), say so, naming each file.

    Raises:
        StoreDamaged: What is damaged.
    """
    found = check_store(folder)
    if found.findings:
        raise StoreDamaged(str(folder), [(str(f.file), f.problem) for f in found.findings])


def readable_view(folder: Path) -> Path:
    """A temporary folder that reads as the store at its newest readable versions (the
    caller removes it with ``shutil.rmtree``, which leaves the links' targets alone).

    Raises:
        StoreError: A table has no readable version at all.
    """
    broken = {found.table: found for found in damaged(folder)}
    for found in broken.values():
        if found.readable is None:
            raise StoreError(f"no version of {found.table} can be read: {found.broken[0][1]}")
    view = Path(tempfile.mkdtemp(prefix="ralph-context-view-"))
    _mirror(folder, view, broken)
    return view


def _mirror(source: Path, target: Path, broken: dict[Path, Versions]) -> None:
    for child in source.iterdir():
        if child in broken:
            _table_view(child, target / child.name, broken[child])
        elif child.is_dir() and any(table.is_relative_to(child) for table in broken):
            (target / child.name).mkdir()
            _mirror(child, target / child.name, broken)
        else:
            (target / child.name).symlink_to(child)


def _table_view(table: Path, target: Path, found: Versions) -> None:
    assert found.readable is not None
    target.mkdir()
    for child in table.iterdir():
        if child.name != "_versions":
            (target / child.name).symlink_to(child)
    (target / "_versions").mkdir()
    for number, path in manifests(table).items():
        if number <= found.readable:
            (target / "_versions" / path.name).symlink_to(path)


@dataclass
class Lost:
    """What one damaged table lost: the versions after the one made current, and the
    data files only they referenced (rows and ids, where the file can still be read)."""

    table: str
    current: int
    lost_versions: list[int]
    moved: list[str]
    files: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Dropped:
    """Fragments of a table's latest version whose data files are gone, committed away in
    a new version (``version``): their rows are lost either way, and until then every
    search of the store failed (a missing file of the usage counters' table took it all)."""

    table: str
    version: int
    fragments: list[int]
    rows: int
    files: list[str]


@dataclass
class RepairReport:
    """Each damaged table and what it lost (nothing: the store was not damaged)."""

    folder: str
    tables: list[Lost] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "repaired": [vars(lost) for lost in self.tables],
            "dropped": [vars(gone) for gone in self.dropped],
        }


def repair(folder: Path) -> RepairReport:
    """Make each damaged table's newest readable version its latest (see the module
    docstring), holding the store's writer lock.

    Raises:
        StoreLocked: Another process writes the store (stop it first).
        StoreError: A table has no readable version at all.
    """
    report = RepairReport(str(folder))
    writer_lock.acquire(folder)
    try:
        broken = damaged(folder)
        for found in broken:
            if found.readable is None:
                raise StoreError(f"no version of {found.table} can be read: {found.broken[0][1]}")
        aside = folder / DAMAGED / datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        for found in broken:
            report.tables.append(_repair_table(folder, found, aside))
        for table in tables(folder):
            gone = _drop_missing(folder, table)
            if gone is not None:
                report.dropped.append(gone)
    finally:
        writer_lock.release(folder)
    return report


def _repair_table(folder: Path, found: Versions, aside: Path) -> Lost:
    assert found.readable is not None
    table = found.table
    keep = aside / table.relative_to(folder) / "_versions"
    keep.mkdir(parents=True, exist_ok=True)
    lost_versions = sorted(n for n in manifests(table) if n > found.readable)
    referenced = _referenced(table, found.readable)
    newest_kept = manifests(table)[found.readable].stat().st_mtime
    moved = []
    for number in lost_versions:
        path = manifests(table)[number]
        shutil.move(str(path), keep / path.name)
        moved.append(str((keep / path.name).relative_to(folder)))
    hint = table / "_versions" / _HINT
    if hint.exists():
        shutil.move(str(hint), keep / _HINT)
    lost = Lost(str(table.relative_to(folder)), found.readable, lost_versions, moved)
    for path in sorted((table / "data").glob("*.lance")):
        if path not in referenced and path.stat().st_mtime >= newest_kept:
            lost.files.append(_held(folder, path))
    return lost


def _drop_missing(folder: Path, table: Path) -> Dropped | None:
    """Commit ``table`` without the fragments of its latest version whose data files are
    gone (Lance's delete of whole fragments: the rest, and its indexes, stay as they are)."""
    try:
        dataset = lance.dataset(str(table))
    except Exception:  # no readable manifest: the step above reported it
        return None
    root = Path(dataset.uri) / "data"
    gone = [
        fragment
        for fragment in dataset.get_fragments()
        if any(not (root / data.path).exists() for data in fragment.metadata.files)
    ]
    if not gone:
        return None
    ids = [int(fragment.fragment_id) for fragment in gone]
    # The whole fragments listed go; no row is chosen by the predicate ("false"), which
    # the transaction records: "true" would say every row was deleted.
    operation = lance.LanceOperation.Delete(
        updated_fragments=[], deleted_fragment_ids=ids, predicate="false"
    )
    after = lance.LanceDataset.commit(str(table), operation, read_version=dataset.version)
    rows = sum(f.metadata.physical_rows - (f.metadata.num_deletions or 0) for f in gone)
    files = sorted(str((root / d.path).relative_to(folder)) for f in gone for d in f.metadata.files)
    log.warning("fragments_dropped", table=table.name, fragments=ids, rows=rows)
    return Dropped(str(table.relative_to(folder)), int(after.version), ids, int(rows), files)


def _referenced(table: Path, newest: int) -> set[Path]:
    """The data files any readable version up to ``newest`` references."""
    found: set[Path] = set()
    for number in manifests(table):
        if number > newest:
            continue
        try:
            dataset = lance.dataset(str(table), version=number)
        except Exception:  # a broken older manifest: its files are not claimed by it
            continue
        found.update(path for path, _ in data_files(dataset))
    return found


def _held(folder: Path, path: Path) -> dict[str, Any]:
    """What a lost data file holds: its rows and the first ids, or why it cannot say."""
    shown: dict[str, Any] = {"file": str(path.relative_to(folder))}
    try:
        rows = LanceFileReader(str(path)).read_all().to_table()
    except Exception as exc:  # a half-written file: named, not read
        shown["unreadable"] = str(exc).split(", /", 1)[0]
        return shown
    shown["rows"] = rows.num_rows
    if "id" in rows.column_names:
        shown["ids"] = [str(i) for i in rows.column("id").to_pylist()[:_SHOWN_IDS]]
    return shown
