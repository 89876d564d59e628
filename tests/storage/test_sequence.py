"""Each item's place in the store's order, the neighbours it gives, and the migration of
stores written before the column existed."""

from __future__ import annotations

from pathlib import Path

import lancedb

from ralph_context.models import ContextItem, ContextType
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.schema import ITEMS
from tests.helpers import unit


def turn(text: str, source: str = "conv", iteration: int = 1, **extra: object) -> ContextItem:
    return ContextItem(
        content=text,
        content_type=ContextType.ITERATION,
        source=source,
        created_iteration=iteration,
        **extra,  # type: ignore[arg-type]
    )


def test_items_get_consecutive_places_that_survive_a_reopen(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    first = store.add_items([(turn("a"), unit(1, 0, 0, 0)), (turn("b"), None)])
    assert [i.sequence for i in first] == [0, 1]
    reopened = LanceStore(tmp_path, model_id="m", dimension=4)
    (third,) = reopened.add_items([(turn("c"), unit(0, 1, 0, 0))])
    assert third.sequence == 2
    assert [i.sequence for i in reopened.get_items([first[1].id, third.id])] == [1, 2]


def test_neighbours_are_the_adjacent_items_of_the_same_thread_and_filter(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    a, b, c = store.add_items([(turn(t), unit(1, 0, 0, 0)) for t in ("a", "b", "c")])
    (other,) = store.add_items([(turn("d", source="elsewhere"), unit(0, 1, 0, 0))])
    (later,) = store.add_items([(turn("e", iteration=2), None)])
    found = {item.id for item, _ in store.neighbours([b], ItemFilter())}
    assert found == {a.id, c.id}
    # c's next place holds another source's item: not a neighbour, nor is b itself repeated.
    assert {item.id for item, _ in store.neighbours([b, c], ItemFilter())} == {a.id}
    assert store.neighbours([other], ItemFilter()) == []
    assert store.neighbours([later], ItemFilter()) == []
    only_errors = ItemFilter(types=(ContextType.ERROR,))
    assert store.neighbours([b], only_errors) == []


def test_a_store_from_before_the_column_is_migrated_on_open(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    (old,) = store.add_items([(turn("old"), unit(1, 0, 0, 0))])
    db = lancedb.connect(str(tmp_path))
    db.open_table(ITEMS).drop_columns(["sequence"])
    assert "sequence" not in db.open_table(ITEMS).schema.names
    migrated = LanceStore(tmp_path, model_id="m", dimension=4)
    assert "sequence" in migrated.items.schema.names
    (kept,) = migrated.get_items([old.id])
    assert kept.content == "old" and kept.sequence is None  # no place: no neighbours
    (new,) = migrated.add_items([(turn("new"), unit(0, 1, 0, 0))])
    assert new.sequence == 0
    assert migrated.neighbours([kept], ItemFilter()) == []
    hits = migrated.vector_search(unit(1, 0, 0, 0), 2, ItemFilter())
    assert [item.id for item, _, _ in hits] == [old.id, new.id]
