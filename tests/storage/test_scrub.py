"""Scrub: rows deleted or rewritten leave every file of the store, whatever share of their
file they were, in the hot table, its text indexes, the archive and the iteration records."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem, ContextType, IterationResult
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.store.iterations import FORGOTTEN
from ralph_context.storage.table.filters import ItemFilter
from tests.helpers import files_holding, marker, unit


def hundred(secret: str) -> list[tuple[ContextItem, Vectors | None]]:
    """100 items for one write (one data file); the 43rd holds ``secret`` in its text, a tag
    and its metadata."""
    items = [
        ContextItem(
            content=f"ordinary note number {n} about the build",
            content_type=ContextType.OUTPUT,
        )
        for n in range(100)
    ]
    items[42] = items[42].model_copy(
        update={
            "content": f"the deploy key is {secret} keep it safe",
            "tags": [secret, "keys"],
            "metadata": {"note": secret},
        }
    )
    return [(item, unit(1, n % 7, 0.5, 0)) for n, item in enumerate(items)]


def test_a_forgotten_row_leaves_no_file_of_the_hot_table_or_its_indexes(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    secret = marker()
    stored = store.add_items(hundred(secret))
    store.maintain()  # the text and tag indexes take the rows in
    assert files_holding(tmp_path, secret)
    store.prune([stored[42].id], [])
    store.maintain(reclaim=True)  # what forget did before: the row's file stays
    assert files_holding(tmp_path, secret)

    report = store.scrub()

    assert report.scrubbed
    assert files_holding(tmp_path, secret) == []
    assert store.stats().items == 99
    assert store.text_search("ordinary note", 5, ItemFilter()) != []
    assert store.text_search(secret, 5, ItemFilter()) == []


def test_a_rewritten_row_leaves_no_file_after_a_scrub(tmp_path: Path) -> None:
    """Redaction rewrites rows with ``update`` (the old row is deleted, a new one written)."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    secret = marker()
    stored = store.add_items(hundred(secret))
    store.maintain()
    store.items.update(
        where=f"id = '{stored[42].id}'",
        values={
            "content": "the deploy key is [REDACTED] keep it safe",
            "tags": ["keys"],
            "metadata": "{}",
        },
    )
    store.scrub()
    assert files_holding(tmp_path, secret) == []
    assert store.get_items([stored[42].id])[0].content.endswith("[REDACTED] keep it safe")


def test_a_forgotten_archived_item_and_its_original_leave_the_archive(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    secret = marker()
    stored = store.add_items(hundred(secret))
    summarized = store.add_items(
        [
            (
                ContextItem(content=f"long text {secret}", content_type=ContextType.TASK),
                unit(0, 1, 0, 0),
            )
        ]
    )
    store.summarize_items({summarized[0].id: "a short summary"}, datetime.now(UTC))
    store.archive_items([i.id for i in stored], datetime.now(UTC))  # one archive write
    store.maintain()
    assert any(name.startswith("archives/") for name in files_holding(tmp_path, secret))

    store.prune([summarized[0].id], [stored[42].id])
    store.scrub()

    assert files_holding(tmp_path, secret) == []
    assert store.archive.count() == 99


def test_a_cleared_iteration_record_leaves_no_file(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    secret = marker()
    for n in range(1, 101):
        error = f"failed: token {secret} rejected" if n == 43 else None
        store.add_iteration(IterationResult(iteration=n, success=error is None, summary=f"it {n}"))
        if error is not None:
            store.add_iteration(
                IterationResult(iteration=n, success=False, summary=f"it {n}", error=error)
            )
    store.maintain()  # one compacted file of 100 records
    assert files_holding(tmp_path, secret)

    store.forget_iterations(deleted=(), cleared=(43,))
    store.scrub()

    assert files_holding(tmp_path, secret) == []
    cleared = store.iteration(43)
    assert cleared is not None and (cleared.summary, cleared.error) == (FORGOTTEN, FORGOTTEN)
    assert store.iteration(44) is not None
