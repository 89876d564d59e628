"""Read queries in one hop: each query built and run on LanceDB's async table at once.

LanceDB's synchronous ``LanceTable`` runs every step of a query on its background event loop
and waits for it: ``search()`` fetches the schema, ``to_arrow()`` fetches it again (twice,
to look for blob columns this store does not have), then runs the query. Each wait is a
thread hand-off, and on two busy cores each costs far more than the work it waits for:
measured at 100k items, vector top-40 took 9.1 ms that way and 6.5 ms in one hop,
full-text top-20 4.6 and 3.5 ms, and a search makes three to five such queries. Writes stay
on the synchronous API (they are rare, batched and off the request path).

The async table is the one behind the synchronous handle (not a second handle), so reads
see every write made through it at once. Given ``via`` (a local store's searches, see
``uring``), a query is no LanceDB query at all: one scan of the search handle's dataset,
checked out at that table's version, run from the calling thread.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from lance.query import MatchQuery as LanceMatch
from lancedb.background_loop import LOOP
from lancedb.query import MatchQuery
from lancedb.table import AsyncTable

from ralph_context._logging import get_logger
from ralph_context.embeddings.local import Vectors
from ralph_context.storage.replicas.row_cache import ROW_ID, RowCache

if TYPE_CHECKING:  # only a type here
    from ralph_context.storage.table.uring import SearchTable

__all__ = ["async_table", "rows_where", "text_rows", "vector_rows", "warm"]

log = get_logger("ralph_context.storage")


def async_table(table: Any) -> AsyncTable:
    """The async table behind a synchronous ``LanceTable`` (LanceDB keeps it as
    ``_table``; the version is pinned below 0.41 and a test holds this to it)."""
    inner = getattr(table, "_table", None)
    if not isinstance(inner, AsyncTable):
        raise TypeError(f"{type(table).__name__} has no async table behind it")
    return inner


def _run(query: Coroutine[Any, Any, pa.Table]) -> pa.Table:
    result: pa.Table = LOOP.run(query)  # type: ignore[no-untyped-call]
    return result


Build = Callable[[AsyncTable], Any]


def _query(table: Any, build: Build) -> pa.Table:
    """``build``'s query on ``table``, in one hop."""

    async def run() -> pa.Table:
        result: pa.Table = await build(async_table(table)).to_arrow()
        return result

    return _run(run())


def _scan(table: Any, via: SearchTable, **options: Any) -> pa.Table:
    """One scan with ``options`` of ``via``'s dataset at ``table``'s version."""
    result: pa.Table = via.at(table).scanner(**options).to_table()
    return result


def vector_rows(
    table: Any,
    vector: Vectors,
    limit: int,
    *,
    where: str | None = None,
    nprobes: int | None = None,
    cache: RowCache | None = None,
    via: SearchTable | None = None,
) -> pa.Table:
    """The ``limit`` rows nearest to ``vector`` by cosine (prefiltered by ``where``), with
    ``_distance``; ``nprobes`` only when the table has a vector index; the rows from
    ``cache`` when given (see ``row_cache``)."""

    def build(target: AsyncTable) -> Any:
        query = (
            target.query()
            .nearest_to(vector.astype(np.float32))
            .column("vector")
            .distance_type("cosine")
            .limit(limit)
        )
        if nprobes is not None:
            query = query.nprobes(nprobes)
        return query.where(where) if where else query

    if cache is not None:
        return _cached(table, build, "_distance", cache)
    if via is not None:
        nearest: dict[str, Any] = {
            "column": "vector",
            "q": vector.astype(np.float32),
            "k": limit,
            "metric": "cosine",
        }
        if nprobes is not None:
            nearest["nprobes"] = nprobes
        return _scan(table, via, nearest=nearest, filter=where, prefilter=True)
    return _query(table, build)


def text_rows(
    table: Any,
    text: str,
    column: str,
    limit: int,
    *,
    where: str | None = None,
    cache: RowCache | None = None,
    via: SearchTable | None = None,
) -> pa.Table:
    """The ``limit`` best full-text (BM25) matches of ``text`` in ``column`` (prefiltered by
    ``where``), with ``_score``; words are OR-ed, as LanceDB's match query does. The rows
    from ``cache`` when given."""
    match = MatchQuery(text, column)  # type: ignore[call-arg]  # pydantic dataclass defaults

    def build(target: AsyncTable) -> Any:
        query = target.query().nearest_to_text(match).limit(limit)
        return query.where(where) if where else query

    if cache is not None:
        return _cached(table, build, "_score", cache)
    if via is not None:
        found = LanceMatch(text, column)
        return _scan(table, via, full_text_query=found, filter=where, prefilter=True, limit=limit)
    return _query(table, build)


def rows_where(
    table: Any,
    where: str | None,
    limit: int | None,
    *,
    columns: list[str] | None = None,
    cache: RowCache | None = None,
    via: SearchTable | None = None,
) -> pa.Table:
    """Rows matching ``where`` (all rows when ``None``), at most ``limit`` (``None``: all);
    only ``columns`` when given (a listing sorts a few columns, not every row whole); whole
    rows from ``cache`` when given."""

    def build(target: AsyncTable) -> Any:
        query = target.query()
        if where:
            query = query.where(where)
        if limit is not None:
            query = query.limit(limit)
        return query.select(columns) if columns is not None else query

    if cache is not None and columns is None:
        return _cached(table, build, None, cache)
    if via is not None:
        return _scan(table, via, filter=where, limit=limit, columns=columns)
    return _query(table, build)


def _cached(table: Any, build: Build, measure: str | None, cache: RowCache) -> pa.Table:
    """``build``'s rows, its ``measure`` column (distance or score) kept: the query returns
    only row ids (and the measure), the rows come from ``cache``.

    The ids and the rows are two reads, and a commit between them (another replica's, seen
    once the refresh interval has passed, or this replica's own maintenance reloading the
    handle) can move the table to a version where the ids name no row: compaction writes
    rows under new addresses, and Lance's take leaves unknown addresses out without a word.
    Shown on a real table compacted between the two reads (every row of the page gone), and
    the likely way a ``bench replicas`` reader once found none of 172 acknowledged items (not
    reproduced). So when any row is missing, the query runs again whole: its rows in one
    scan, at one version.
    """
    # The measure named: Lance warns on every query whose projection leaves it out.
    found = _run(
        build(async_table(table)).select([measure] if measure else []).with_row_id().to_arrow()
    )
    ids = [int(i) for i in found.column(ROW_ID).to_pylist()]
    rows, present = cache.take(table, ids, _take)
    if len(present) < len(ids):
        log.info("rows_moved_under_query", asked=len(ids), found=len(present))
        return _query(table, build)
    if measure is None:
        return rows
    by_id = dict(zip(ids, found.column(measure).to_pylist(), strict=True))
    return rows.append_column(measure, pa.array([by_id[i] for i in present], pa.float32()))


def _take(table: Any, ids: list[int]) -> pa.Table:
    return _run(async_table(table).take_row_ids(ids).with_row_id().to_arrow())


# Any word will do: the warm-up only needs the full-text index's files opened.
_WARM_WORD = "error"


def warm(
    table: Any,
    dimension: int,
    *,
    vector: bool,
    text_column: str | None,
    via: SearchTable | None = None,
) -> None:
    """One one-row query of each kind on ``table``'s current version, so that the first
    request after a maintenance does not pay for opening the index files it just rewrote
    (every merge or refresh writes them under a new id). Measured on a loop's archive at
    50k rows: the first vector query after a merge took 35-100 ms, the next ones 8; the
    hot table's first full-text query 19 ms, then 5. Unlike ``prewarm_index`` this loads
    only what a query touches (the centroids, a few partitions), not the whole index, so
    a process that maintains often does not grow by a whole index each time. A damaged
    index is left to the query path, which steps down and repairs it."""
    try:
        if vector:
            probe = np.zeros(dimension, dtype=np.float32)
            probe[0] = 1.0
            vector_rows(table, probe, 1, via=via)
        if text_column is not None:
            text_rows(table, _WARM_WORD, text_column, 1, via=via)
    except Exception as exc:  # a warm-up must never fail the maintenance it follows
        log.warning("index_not_warmed", error=type(exc).__name__)
