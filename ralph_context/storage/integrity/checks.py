"""What the store's files can tell about damage: the checks ``verify`` and ``health`` run.

Measured before (issue 62): a truncated latest manifest took the whole store down with
``LanceError(IO): file size is too small`` naming no file; one deleted data file made
``export`` yield 0 of 755 items; 4 KiB of random bytes in a data file changed three
vectors while ``health`` said healthy. So, per table of a store folder (its ``*.lance``
folders and the archive's):

- the latest manifest can be read, else which is the newest version that can (``damage``
  serves the store there, read-only, and ``repair`` makes it current); ``deep``: every
  version's manifest;
- every file the current version references is there (data, deletion and index files),
  each data file of the size the manifest records, and of the checksum sealed when it was
  committed (``checksums``): the quick check hashes only files whose size or modification
  time changed since, ``deep`` hashes every one;
- ``deep``: every fragment can be read, its row count is the manifest's, and every vector
  is finite, of the store's dimension and of unit length.

Nothing here writes: it runs beside a server, on a store opened by nobody, or on one too
damaged to open.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ralph_context.storage.integrity.checksums import Ledger, digest
from ralph_context.storage.lifecycle.archive import ARCHIVES

__all__ = [
    "Finding",
    "Integrity",
    "Versions",
    "check_store",
    "data_files",
    "tables",
    "versions",
]

# How far a stored vector's length may be from 1 (they are stored normalised).
_NORM_TOLERANCE = 1e-3
_ROWS_PER_READ = 4096
_MAX_UINT64 = (1 << 64) - 1


@dataclass(frozen=True)
class Finding:
    """One thing found wrong: the file (under the store's folder) and what is wrong."""

    file: str
    problem: str

    def __str__(self) -> str:
        return f"{self.file}: {self.problem}"


@dataclass
class Integrity:
    """What a check found in a store folder: the tables looked at, files checked, rows and
    vectors read (``deep``), and every finding."""

    folder: str
    deep: bool
    tables: int = 0
    files: int = 0
    hashed: int = 0
    unsealed: int = 0
    rows: int = 0
    vectors: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


@dataclass(frozen=True)
class Versions:
    """A table's versions by manifest: the latest on disk, the newest that can be read
    (``None``: none can), and each unreadable manifest newer than it with Lance's words."""

    table: Path
    latest: int
    readable: int | None
    broken: list[tuple[Path, str]]


def tables(folder: Path) -> list[Path]:
    """The store folder's tables: its own ``*.lance`` folders and the archive's (not the
    other namespaces' folders inside it: each is a store of its own)."""
    found = sorted(p for p in folder.glob("*.lance") if p.is_dir())
    return found + sorted(p for p in (folder / ARCHIVES).glob("*.lance") if p.is_dir())


def manifests(table: Path) -> dict[int, Path]:
    """The table's manifests by version (both of Lance's naming schemes)."""
    found: dict[int, Path] = {}
    for path in (table / "_versions").glob("*.manifest"):
        try:
            number = int(path.stem)
        except ValueError:
            continue
        # Scheme 2 names version v by u64::MAX - v, zero-padded to 20 digits.
        found[_MAX_UINT64 - number if len(path.stem) == 20 else number] = path
    return found


def versions(table: Path, *, every: bool = False) -> Versions:
    """The table's latest version, the newest readable one and the broken ones above it
    (``every``: the broken ones below it too)."""
    found = manifests(table)
    broken: list[tuple[Path, str]] = []
    readable: int | None = None
    for number in sorted(found, reverse=True):
        try:
            lance.dataset(str(table), version=number)
        except Exception as exc:  # Lance's own words for it, whatever its type
            broken.append((found[number], _said(exc)))
            continue
        if readable is None:
            readable = number
            if not every:
                break
    return Versions(table, max(found, default=0), readable, broken)


def data_files(dataset: Any) -> list[tuple[Path, int]]:
    """Every data file ``dataset``'s version references, with the size its manifest
    records (0: not recorded)."""
    root = Path(dataset.uri)
    return [
        (root / "data" / data.path, int(data.file_size_bytes or 0))
        for fragment in dataset.get_fragments()
        for data in fragment.metadata.files
    ]


def check_store(folder: Path, *, deep: bool = False, dimension: int | None = None) -> Integrity:
    """Check the store at ``folder`` (see the module docstring); ``dimension``: the
    vectors' (``deep`` checks them against it)."""
    report = Integrity(str(folder), deep)
    ledger = Ledger(folder)
    for table in tables(folder):
        report.tables += 1
        found = versions(table, every=deep)
        for path, problem in found.broken:
            report.findings.append(Finding(_under(folder, path), problem))
        if found.readable is None:
            continue
        dataset = lance.dataset(str(table), version=found.readable)
        _check_files(folder, dataset, ledger, report)
        if deep:
            _check_rows(folder, dataset, dimension, report)
    return report


def _check_files(folder: Path, dataset: Any, ledger: Ledger, report: Integrity) -> None:
    sizes = dict(data_files(dataset))
    root = Path(dataset.uri)
    try:
        referenced = [
            root / str(path)
            for batch in dataset.tracked_files(min_version=dataset.version)
            for version, path in zip(
                batch.column("version").to_pylist(), batch.column("path").to_pylist(), strict=True
            )
            if version == dataset.version
        ]
    except Exception:  # a newer manifest is broken (reported): the data files alone
        referenced = []
    for path in dict.fromkeys([*referenced, *sizes]):
        report.files += 1
        name = _under(folder, path)
        try:
            stat = path.stat()
        except FileNotFoundError:
            report.findings.append(Finding(name, "missing"))
            continue
        recorded = sizes.get(path)
        if recorded and stat.st_size != recorded:
            problem = f"{stat.st_size} bytes, its manifest says {recorded}"
            report.findings.append(Finding(name, problem))
            continue
        if path not in sizes:
            continue  # manifests, deletion and index files: present is what is known
        entry = ledger.entries.get(name)
        if entry is None:
            report.unsealed += 1
        elif report.deep or not entry.same_stat(stat):
            report.hashed += 1
            if digest(path) != entry.blake2b:
                report.findings.append(Finding(name, "its bytes differ from those committed"))


def _check_rows(folder: Path, dataset: Any, dimension: int | None, report: Integrity) -> None:
    has_vectors = "vector" in dataset.schema.names
    for fragment in dataset.get_fragments():
        files = ", ".join(_under(folder, path) for path, _ in _fragment_files(dataset, fragment))
        expected = fragment.metadata.physical_rows - fragment.metadata.num_deletions
        rows = 0
        try:
            for batch in fragment.to_batches(batch_size=_ROWS_PER_READ):
                rows += batch.num_rows
                if has_vectors:
                    problem = _vector_problem(batch.column("vector"), dimension)
                    report.vectors += batch.num_rows
                    if problem:
                        report.findings.append(Finding(files, problem))
                        break
        except Exception as exc:
            report.findings.append(Finding(files, f"unreadable: {_said(exc)}"))
            continue
        report.rows += rows
        if rows != expected:
            problem = f"{rows} rows read, its manifest says {expected}"
            report.findings.append(Finding(files, problem))


def _fragment_files(dataset: Any, fragment: Any) -> list[tuple[Path, int]]:
    root = Path(dataset.uri) / "data"
    return [(root / d.path, int(d.file_size_bytes or 0)) for d in fragment.metadata.files]


def _vector_problem(column: pa.ChunkedArray | pa.Array, dimension: int | None) -> str | None:
    """What is wrong with a batch's vectors, or ``None``."""
    kind = column.type
    if dimension is not None and getattr(kind, "list_size", dimension) != dimension:
        return f"vectors of {kind.list_size} numbers, the model makes {dimension}"
    present = pc.drop_null(column)
    if len(present) == 0:
        return None
    flat = pc.list_flatten(present).to_numpy(zero_copy_only=False)
    matrix = np.asarray(flat, dtype=np.float32).reshape(len(present), -1)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        return f"{int((~finite).sum())} vector(s) hold NaN or infinity"
    norms = np.linalg.norm(matrix, axis=1)
    off = np.abs(norms - 1.0) > _NORM_TOLERANCE
    if off.any():
        worst = float(norms[off][np.argmax(np.abs(norms[off] - 1.0))])
        return f"{int(off.sum())} vector(s) not of unit length (one is {worst:.4g})"
    return None


def _under(folder: Path, path: Path) -> str:
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return str(path)


def _said(exc: BaseException) -> str:
    """Lance's message, without the source location it appends."""
    text = str(exc).split(", /", 1)[0].strip()
    return text or type(exc).__name__
