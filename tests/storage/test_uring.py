"""Searches on their own Lance handle, through io_uring: the same answers as the store's own
handle, every write seen at once, and the plain path wherever io_uring is not to be used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pytest

from ralph_context.config import StorageSettings
from ralph_context.models import ContextItem, ContextState, ContextType
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.table import uring
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.uring import kernel_allows, uring_uri
from tests.helpers import unit

needs_io_uring = pytest.mark.skipif(not kernel_allows(), reason="this kernel refuses io_uring")


def item(content: str, **extra: object) -> ContextItem:
    return ContextItem(content=content, content_type=ContextType.OUTPUT, **extra)  # type: ignore[arg-type]


def test_a_folder_name_is_percent_encoded_in_the_uri() -> None:
    # A raw "#" would start a fragment and a raw "%41" would be read as "A".
    assert uring_uri(Path("/tmp/a #b%41")) == "file+uring:///tmp/a%20%23b%2541"


@needs_io_uring
def test_searches_go_through_io_uring_and_see_every_write_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "odd #name%41"
    store = LanceStore(folder, model_id="m", dimension=4)
    assert store.searcher is not None and store.searcher.io_uring
    (first,) = store.add_items(
        [(item("the wheel build timed out", source="loop", iteration=1), unit(1, 0, 0, 0))]
    )
    assert [i.id for i, _, _ in store.vector_search(unit(1, 0, 0, 0), 5, ItemFilter())] == [
        first.id
    ]
    # A write right after a search: the next search is on the new version.
    (second,) = store.add_items(
        [(item("pin the wheel version", source="loop", iteration=1), unit(1, 0.2, 0, 0))]
    )
    found = store.vector_search(unit(1, 0, 0, 0), 5, ItemFilter())
    assert [i.id for i, _, _ in found] == [first.id, second.id]
    assert {i.id for i, _, _ in store.text_search("wheel", 5, ItemFilter())} == {
        first.id,
        second.id,
    }
    assert [i.id for i, _ in store.neighbours([first], ItemFilter())] == [second.id]
    store.set_state([first.id], ContextState.SUMMARIZED)
    hot = ItemFilter(states=(ContextState.ACTIVE,))
    assert [i.id for i, _, _ in store.vector_search(unit(1, 0, 0, 0), 5, hot)] == [second.id]
    assert store.delete_items([second.id]) == 1
    assert store.text_search("version", 5, ItemFilter()) == []
    # Compaction and cleanup are committed by the upkeep process; searches follow.
    store.maintain(reclaim=True)
    assert [i.id for i, _, _ in store.text_search("wheel", 5, ItemFilter())] == [first.id]
    store.close()
    # Same files either way: reopened without io_uring, the store finds the same.
    plain = LanceStore.configured(
        folder, StorageSettings(io_uring=False), model=("m", 4), read_only=False
    )
    assert plain.searcher is not None and not plain.searcher.io_uring
    assert [i.id for i, _, _ in plain.text_search("wheel", 5, ItemFilter())] == [first.id]


def test_turned_off_searches_read_the_plain_path_and_a_reader_has_no_search_handle(
    tmp_path: Path,
) -> None:
    store = LanceStore.configured(
        tmp_path, StorageSettings(io_uring=False), model=("m", 4), read_only=False
    )
    assert store.searcher is not None and not store.searcher.io_uring
    store.add_items([(item("kept"), unit(1, 0, 0, 0))])
    reader = LanceStore(tmp_path, model_id="m", dimension=4, read_only=True)
    # The reader must see the writer's later commits on every read: its own handle does.
    assert reader.searcher is None
    later = item("stored after the reader opened")
    store.add_items([(later, unit(0, 1, 0, 0))])
    assert [i.id for i, _, _ in reader.vector_search(unit(0, 1, 0, 0), 1, ItemFilter())] == [
        later.id
    ]


def test_a_kernel_or_reader_that_refuses_io_uring_leaves_searches_on_the_plain_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_dataset = lance.dataset

    def refuse(uri: str, **options: Any) -> Any:
        if str(uri).startswith("file+uring"):
            raise OSError("io_uring_setup: Operation not permitted")
        return real_dataset(uri, **options)

    monkeypatch.setattr(lance, "dataset", refuse)
    monkeypatch.setattr(uring, "kernel_allows", lambda: True)
    store = LanceStore(tmp_path / "a", model_id="m", dimension=4)
    assert store.searcher is not None and not store.searcher.io_uring
    (kept,) = store.add_items([(item("kept"), unit(1, 0, 0, 0))])
    assert [i.id for i, _, _ in store.vector_search(unit(1, 0, 0, 0), 1, ItemFilter())] == [kept.id]
    monkeypatch.setattr(uring, "kernel_allows", lambda: False)
    searcher = LanceStore(tmp_path / "b", model_id="m", dimension=4).searcher
    assert searcher is not None and not searcher.io_uring


def test_a_search_handle_that_cannot_open_leaves_searches_on_the_store_handle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(uri: str, **options: Any) -> Any:
        raise OSError(f"cannot open {uri}")

    monkeypatch.setattr(lance, "dataset", refuse)
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    assert store.searcher is None
    (kept,) = store.add_items([(item("kept"), unit(1, 0, 0, 0))])
    assert [i.id for i, _, _ in store.vector_search(unit(1, 0, 0, 0), 1, ItemFilter())] == [kept.id]
    assert [i.id for i, _, _ in store.text_search("kept", 1, ItemFilter())] == [kept.id]
