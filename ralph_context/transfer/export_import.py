"""Export and import (``ralph-context export`` / ``import``): a store as JSON lines, for
backups and for moving memory between machines and embedding models.

The file is streamed both ways (a 1M-item store never sits in memory): a header line, then
one line per hot item, archived item and iteration::

    {"format": "ralph-context-export/1", "model_id": ..., "dimension": 384, ...}
    {"kind": "item", "item": {...}, "vector": [...] | null}
    {"kind": "archived", "item": {...}, "vector": null}
    {"kind": "iteration", "iteration": {...}}

Items keep their ids, counters and iterations. On import a vector is used as it is when
the file's model and dimension are the store's; otherwise (another model, or exported
without vectors) the text is embedded again. Items whose id is already in the store are
skipped, so importing a file twice, or into the store it came from, stores nothing twice.
Archived items come back archived; their vectors are not exported (they are embedded
again on import), nor are the full texts kept for summarized items.

Forget is final (issue 62): an export taken before a forget holds what it deleted, so an
item whose id or text a forget tombstoned (``storage.lifecycle.tombstones``), and the record of an
iteration a forget deleted or cleared, are skipped and counted as ``forgotten``.
``include_forgotten`` (``import --include-forgotten``) is the way to bring them back on
purpose: they are stored, and their tombstones lifted.

Export reads the items and the iterations a fragment at a time: from a damaged store it
writes every row that can be read and reports each fragment that cannot, with its rows
(one deleted data file once made it write 0 of 755 items).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import numpy as np

from ralph_context import origin
from ralph_context.errors import InvalidInput, StoreError
from ralph_context.models import ContextItem, IterationResult
from ralph_context.storage.lifecycle.tombstones import CONTENT, ID, ITERATION
from ralph_context.validation import check_content, check_metadata, check_tags

if TYPE_CHECKING:
    from ralph_context.actors.storage.actor import StorageActor
    from ralph_context.embeddings.local import Vectors
    from ralph_context.engine import Engine
    from ralph_context.storage.integrity.salvage import Salvage

__all__ = ["FORMAT", "IMPORT_PATH", "TransferReport", "export_store", "import_store"]

FORMAT = "ralph-context-export/1"
# Where a server takes an import beside it (``server.import_route``; ``ralph-context import``).
IMPORT_PATH = "/transfer/import"
# Items read, embedded or written per step.
_CHUNK = 256

Progress = Callable[[int], None]
T = TypeVar("T")


@dataclass
class TransferReport:
    """What an export wrote or an import stored."""

    items: int = 0
    archived: int = 0
    iterations: int = 0
    skipped: int = 0
    embedded: int = 0
    # Items and iteration records skipped because a forget deleted them (or, with
    # include_forgotten, brought back).
    forgotten: int = 0
    # What an export could not read (a damaged or missing file): each fragment or part,
    # with why, and the rows they held (by the manifest) that are not in the file.
    unreadable: list[str] = field(default_factory=list)
    lost: int = 0


async def export_store(
    engine: Engine, out: TextIO, *, vectors: bool = True, progress: Progress | None = None
) -> TransferReport:
    """Write ``engine``'s store to ``out`` as JSON lines; ``progress`` gets each line
    count written."""
    storage = engine._require_storage()
    report = TransferReport()
    header = {
        "format": FORMAT,
        "model_id": storage.model_id,
        "dimension": storage.dimension,
        "exported_at": datetime.now(UTC).isoformat(),
        "vectors": vectors,
    }
    out.write(json.dumps(header) + "\n")
    # A fragment at a time: one whose files cannot be read costs its own rows (``salvage``).
    hot = await storage.salvage()
    async for item, vector in _salvaged(hot, storage.salvaged_items, report):
        shown = vector.tolist() if vectors and vector is not None else None
        _line(out, {"kind": "item", "item": item.model_dump(mode="json"), "vector": shown})
        report.items += 1
        if report.items % _CHUNK == 0:
            _tick(progress, report)
    try:
        archived_ids = [entry.item.id for entry in await storage.archived_rows()]
        for start in range(0, len(archived_ids), _CHUNK):
            for entry in await storage.find_archived(archived_ids[start : start + _CHUNK]):
                if entry.reason == "archived":
                    _line(out, {"kind": "archived", "item": entry.item.model_dump(mode="json")})
                    report.archived += 1
            _tick(progress, report)
    except StoreError as exc:
        report.unreadable.append(f"the archive: {exc}")
    records = await storage.salvage(iterations=True)
    async for result in _salvaged(records, storage.salvaged_iterations, report):
        _line(out, {"kind": "iteration", "iteration": result.model_dump(mode="json")})
        report.iterations += 1
    _tick(progress, report)
    return report


async def _salvaged(
    salvage: Salvage,
    read: Callable[[Salvage, int, int, int], Awaitable[list[T]]],
    report: TransferReport,
) -> AsyncIterator[T]:
    """Every row of ``salvage`` that can be read, a slice at a time; a fragment that
    cannot is named in ``report`` with its rows not read."""
    for piece in salvage.pieces:
        offset = 0
        while offset < piece.rows:
            try:
                rows = await read(salvage, piece.fragment, offset, _CHUNK)
            except StoreError as exc:
                report.unreadable.append(f"{', '.join(piece.files)}: {exc}")
                report.lost += piece.rows - offset
                break
            if not rows:
                break
            for row in rows:
                yield row
            offset += len(rows)


async def import_store(
    engine: Engine,
    lines: Iterable[str],
    *,
    progress: Progress | None = None,
    include_forgotten: bool = False,
    first_line: int = 2,
) -> TransferReport:
    """Store what an export wrote (see the module docstring); what a forget deleted is
    skipped unless ``include_forgotten``. ``first_line``: the file's line number of the
    record after the header (a chunk of a file sent to a server).

    Raises:
        InvalidInput: Not an export of this format, or a malformed line (named by number).
    """
    storage = engine._require_storage()
    report = TransferReport()
    numbered = _numbered(lines, first_line)
    header = _header(numbered)
    same_model = (
        header.get("model_id") == storage.model_id and header.get("dimension") == storage.dimension
    )
    limit = engine.settings.storage.max_content_bytes
    pending: list[tuple[ContextItem, Vectors | None, bool]] = []
    for number, record in _records(numbered):
        kind = record.get("kind")
        try:
            if kind in ("item", "archived"):
                given = _checked(ContextItem.model_validate(record["item"]), limit)
                item = engine.redactor.item(_imported(given))
                if _forgotten(storage, item, include_forgotten):
                    report.forgotten += 1
                    continue
                # A vector made from a secret is not kept: the redacted text is embedded.
                vector = (
                    _usable(record.get("vector"), storage.dimension)
                    if same_model and item.content == given.content
                    else None
                )
                pending.append((item, vector, kind == "archived"))
                if len(pending) >= _CHUNK:
                    await _store_chunk(engine, pending, report)
                    pending = []
                    _tick(progress, report)
            elif kind == "iteration":
                result = IterationResult.model_validate(record["iteration"])
                mark = str(result.iteration)
                if storage.forgotten_at(ITERATION, mark) is not None:
                    report.forgotten += 1
                    if not include_forgotten:
                        continue
                    await storage.unbury([(ITERATION, mark)])
                await storage.add_iteration(engine.redactor.iteration(result))
                report.iterations += 1
            else:
                raise InvalidInput(f"unknown kind {kind!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"line {number}: {exc}") from None
    if pending:
        await _store_chunk(engine, pending, report)
    _tick(progress, report)
    return report


async def _store_chunk(
    engine: Engine,
    chunk: list[tuple[ContextItem, Vectors | None, bool]],
    report: TransferReport,
) -> None:
    storage = engine._require_storage()
    ids = [item.id for item, _, _ in chunk]
    present = {item.id for item in await storage.get_items(ids)}
    present |= {entry.item.id for entry in await storage.find_archived(ids)}
    fresh = [entry for entry in chunk if entry[0].id not in present]
    report.skipped += len(chunk) - len(fresh)
    if not fresh:
        return
    # Brought back on purpose (include_forgotten): their tombstones go first, or the store
    # would refuse their ids.
    back = [item for item, _, _ in fresh if _buried(storage, item)]
    if back:
        report.forgotten += len(back)
        await storage.unbury([mark for item in back for mark in _marks(item)])
    vectors: list[Vectors | None] = [vector for _, vector, _ in fresh]
    missing = [n for n, vector in enumerate(vectors) if vector is None]
    if missing:
        embedded = await engine.embed([fresh[n][0].content for n in missing])
        for n, vector in zip(missing, embedded, strict=True):
            vectors[n] = vector
        report.embedded += sum(vector is not None for vector in embedded)
    pairs = [(item, vector) for (item, _, _), vector in zip(fresh, vectors, strict=True)]
    await storage.add_items(pairs)
    archived = [item.id for item, _, was_archived in fresh if was_archived]
    if archived:
        await storage.archive_items(archived)
    report.archived += len(archived)
    report.items += len(fresh) - len(archived)


def _forgotten(storage: StorageActor, item: ContextItem, include: bool) -> bool:
    """True when a forget deleted ``item`` (its id or its text) and it is to be skipped;
    with ``include``, False (its tombstones are lifted when it is stored)."""
    return not include and _buried(storage, item)


def _buried(storage: StorageActor, item: ContextItem) -> bool:
    return any(storage.forgotten_at(kind, value) is not None for kind, value in _marks(item))


def _marks(item: ContextItem) -> tuple[tuple[str, str], ...]:
    """What a forget tombstones an item by: its id and its text."""
    return ((ID, item.id), (CONTENT, item.content))


def _imported(item: ContextItem) -> ContextItem:
    """``item`` recorded as an import: a file can say anything about who wrote it, so its
    own ``recorded_by`` is kept only as what the file claimed."""
    metadata = dict(item.metadata)
    claimed = metadata.pop(origin.RECORDED_BY, None)
    if isinstance(claimed, str):
        metadata["recorded_by_in_file"] = claimed[:80]
    return item.model_copy(update={"metadata": {**metadata, origin.RECORDED_BY: origin.IMPORT}})


def _checked(item: ContextItem, max_bytes: int) -> ContextItem:
    """An imported item under the same rules as a stored one (the file may come from
    anywhere)."""
    check_content(item.content, max_bytes=max_bytes)
    check_tags(item.tags)
    check_metadata(item.metadata)
    return item


def _usable(vector: object, dimension: int | None) -> Vectors | None:
    """The file's vector if it is ``dimension`` finite numbers of unit length, else ``None``
    (the text is embedded again)."""
    if not isinstance(vector, list) or dimension is None or len(vector) != dimension:
        return None
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        return None
    if not np.isfinite(array).all() or abs(float(np.linalg.norm(array)) - 1.0) > 1e-3:
        return None
    return array


def _header(numbered: Iterator[tuple[int, str]]) -> dict[str, Any]:
    for number, line in numbered:
        if not line.strip():
            continue
        try:
            header = json.loads(line)
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise InvalidInput(f"line {number}: not a {FORMAT} file (its first line says so)")
        return header
    raise InvalidInput("the file is empty")


def _numbered(lines: Iterable[str], first: int) -> Iterator[tuple[int, str]]:
    """The header as line 1, the records from line ``first`` on."""
    given = iter(lines)
    for header in given:
        yield 1, header
        break
    yield from enumerate(given, start=first)


def _records(numbered: Iterator[tuple[int, str]]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in numbered:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(f"line {number}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise InvalidInput(f"line {number}: not a JSON object")
        yield number, record


def _line(out: TextIO, record: dict[str, Any]) -> None:
    out.write(json.dumps(record, ensure_ascii=False) + "\n")


def _tick(progress: Progress | None, report: TransferReport) -> None:
    if progress is not None:
        progress(report.items + report.archived + report.iterations + report.skipped)
