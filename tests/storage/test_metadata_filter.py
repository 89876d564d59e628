"""Metadata filters: each operator matches what a person reading it expects, on any stored
value, and stores written with text metadata are moved to Lance JSON on open."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralph_context.errors import InvalidMetadata, StoreError
from ralph_context.metadata_filter import (
    MetadataCondition,
    MetadataOp,
    check_metadata_filter,
    parse_condition,
)
from ralph_context.models import ContextItem, ContextType, JsonValue
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.json_metadata import _converted
from ralph_context.storage.table.schema import ITEMS
from tests.helpers import unit

KEY = 'k "odd" key\\'


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "text" if isinstance(value, str) else "other"


def _escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def expected(stored: dict[str, Any], condition: MetadataCondition) -> bool:
    """The documented meaning of a condition, in Python."""
    missing = object()
    value = stored.get(condition.key, missing)

    def equal(wanted: object) -> bool:
        if value is missing or _kind(value) != _kind(wanted):
            return False
        if _kind(value) == "number":
            return float(value) == float(wanted)  # type: ignore[arg-type]
        return bool(value == wanted)

    op = condition.op
    if op is MetadataOp.EQ:
        return equal(condition.value)
    if op is MetadataOp.NE:
        return not equal(condition.value)
    if op is MetadataOp.IN:
        return any(equal(v) for v in condition.values)
    if op is MetadataOp.NOT_IN:
        return not any(equal(v) for v in condition.values)
    wanted = condition.value
    if value is missing or _kind(value) != _kind(wanted):
        return False
    left: Any
    right: Any
    if _kind(value) == "number":
        left, right = float(value), float(wanted)  # type: ignore[arg-type]
    else:
        left, right = _escaped(value), _escaped(wanted)  # type: ignore[arg-type]
    return bool(
        {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]
    )


text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=6)
number = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False).map(lambda f: round(f, 1)))
scalar = st.one_of(text, number, st.booleans(), st.sampled_from(["2", "a", "b", "a!", "a "]))
stored_value = st.one_of(scalar, st.none(), st.just([1, 2]), st.just({"x": 1}))


@st.composite
def conditions(draw: st.DrawFn) -> MetadataCondition:
    op = draw(st.sampled_from(list(MetadataOp)))
    if op in (MetadataOp.IN, MetadataOp.NOT_IN):
        value: Any = draw(st.lists(scalar, min_size=1, max_size=4))
    elif op in (MetadataOp.EQ, MetadataOp.NE):
        value = draw(scalar)
    else:
        value = draw(st.one_of(text, number, st.sampled_from(["a", "a!", "b"])))
    return MetadataCondition(key=KEY, op=op, value=value)


@pytest.fixture(scope="module")
def store() -> Iterator[LanceStore]:
    yield LanceStore(None, model_id="unit", dimension=4)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(stored_value, min_size=1, max_size=8), condition=conditions())
def test_every_operator_matches_its_documented_meaning(
    store: LanceStore, values: list[Any], condition: MetadataCondition
) -> None:
    batch = uuid.uuid4().hex
    # One item per value, and one without the key.
    metadata = [{"batch": batch, KEY: value} for value in values] + [{"batch": batch}]
    items = [
        ContextItem(content=str(n), content_type=ContextType.OUTPUT, metadata=m)
        for n, m in enumerate(metadata)
    ]
    store.add_items([(item, unit(1, 0, 0, 0)) for item in items])
    mine = MetadataCondition(key="batch", op=MetadataOp.EQ, value=batch)
    where = ItemFilter(metadata=(mine, condition))
    found = {item.id for item in store.list_items(where, limit=100)}
    wanted = {item.id for item in items if expected(item.metadata, condition)}
    assert found == wanted, (condition, [item.metadata for item in items])
    hits = store.vector_search(unit(1, 0, 0, 0), 100, where)
    assert {item.id for item, _, _ in hits} == wanted


def test_examples_read_as_written(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    rows: list[dict[str, JsonValue]] = [
        {"priority": 3, "lang": "py", "due": "2026-11-30", "v": "a"},
        {"priority": 1.5, "lang": "rs", "due": "2026-12-02", "v": "a!"},
        {"priority": "high", "lang": "py", "v": "a b"},
        {"lang": "go", "done": True},
        {},
    ]
    items = store.add_items(
        [
            (ContextItem(content=f"n{i}", content_type=ContextType.TASK, metadata=m), None)
            for i, m in enumerate(rows)
        ]
    )

    def names(*texts: str) -> list[str]:
        where = ItemFilter(metadata=tuple(parse_condition(t) for t in texts))
        return sorted(item.content for item in store.list_items(where, 10))

    assert names("priority >= 2") == ["n0"]  # "high" is text, not a number
    assert names("priority < 2") == ["n1"]
    assert names("lang in py,rs") == ["n0", "n1", "n2"]
    assert names("lang != py") == ["n1", "n3", "n4"]  # without the key too
    assert names('lang not in ["py", "rs"]') == ["n3", "n4"]
    assert names("due < 2026-12-01") == ["n0"]
    assert names("done == true") == ["n3"]
    assert names("priority == high", "lang == py") == ["n2"]
    assert names("priority != 3") == ["n1", "n2", "n3", "n4"]
    # "a" sorts before "a!" and "a b", though its JSON text '"a"' sorts after theirs.
    assert names("v > a") == ["n1", "n2"]
    assert names('v < "a!"') == ["n0", "n2"]
    assert items[0].metadata["due"] == "2026-11-30"


def test_bad_conditions_are_refused_naming_what_is_allowed() -> None:
    with pytest.raises(InvalidMetadata, match=r"metadata\[0\]: op must be one of: =="):
        check_metadata_filter([{"key": "a", "op": "~", "value": 1}])
    with pytest.raises(InvalidMetadata, match="needs a non-empty list"):
        check_metadata_filter([{"key": "a", "op": "in", "value": []}])
    with pytest.raises(InvalidMetadata, match="not a boolean"):
        check_metadata_filter([{"key": "a", "op": ">", "value": True}])
    with pytest.raises(InvalidMetadata, match="value must be text, a number or a boolean"):
        check_metadata_filter([{"key": "a", "op": "==", "value": {"x": 1}}])
    with pytest.raises(InvalidMetadata, match="finite"):
        check_metadata_filter([{"key": "a", "op": "==", "value": float("inf")}])
    # The numbers metadata can hold exactly, no others (the same check).
    with pytest.raises(InvalidMetadata, match=r"'a' is a 1329-bit integer; integers must be"):
        check_metadata_filter([{"key": "a", "op": "<", "value": 10**400}])
    with pytest.raises(InvalidMetadata, match=r"'a' is a 65-bit integer"):
        check_metadata_filter([{"key": "a", "op": "in", "value": [1, 2**64]}])
    assert check_metadata_filter([{"key": "a", "op": "==", "value": 2**53 - 1}])
    with pytest.raises(InvalidMetadata, match="1001 characters; at most 1000"):
        check_metadata_filter([{"key": "a", "op": "in", "value": ["x" * 1001]}])
    with pytest.raises(InvalidMetadata, match="at most 100"):
        check_metadata_filter([{"key": "a", "op": "in", "value": list(range(101))}])
    with pytest.raises(InvalidMetadata, match="must be a list of conditions"):
        check_metadata_filter({"key": "a", "op": "==", "value": 1})
    with pytest.raises(InvalidMetadata, match="is not KEY OP VALUE"):
        parse_condition("priority")
    assert parse_condition("lang = py") == MetadataCondition(
        key="lang", op=MetadataOp.EQ, value="py"
    )


def _old_items_table(location: Path) -> None:
    """Make ``location``'s items table keep metadata as text, as stores did before."""
    db = lancedb.connect(str(location))
    table = db.open_table(ITEMS)
    rows = table.to_arrow()
    position = rows.schema.get_field_index("metadata")
    text = pa.array(rows.column("metadata").cast(pa.string()).to_pylist(), pa.string())
    old = rows.set_column(position, pa.field("metadata", pa.string(), False), text)
    db.create_table(ITEMS, data=old, mode="overwrite")
    assert db.open_table(ITEMS).schema.field("metadata").type == pa.string()


def test_a_store_with_text_metadata_is_moved_to_json_on_open(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    kept = store.add_items(
        [
            (
                ContextItem(
                    content=f"t{i}", content_type=ContextType.OUTPUT, metadata={"n": i, "s": "é\"'"}
                ),
                unit(1, 0, 0, i),
            )
            for i in range(5)
        ]
    )
    store.close()
    _old_items_table(tmp_path)
    reader = LanceStore(tmp_path, model_id="m", dimension=4, read_only=True)
    with pytest.raises(StoreError, match="keeps metadata as text"):
        reader.list_items(ItemFilter(metadata=(parse_condition("n >= 3"),)), 10)
    assert len(reader.list_items(ItemFilter(), 10)) == 5  # unfiltered reads still work

    migrated = LanceStore(tmp_path, model_id="m", dimension=4)
    where = ItemFilter(metadata=(parse_condition("n >= 3"),))
    assert sorted(i.content for i in migrated.list_items(where, 10)) == ["t3", "t4"]
    assert [i.metadata for i in migrated.get_items([k.id for k in kept])] == [
        k.metadata for k in kept
    ]
    migrated.add_items(
        [
            (
                ContextItem(content="t5", content_type=ContextType.OUTPUT, metadata={"n": 5}),
                unit(0, 1, 0, 0),
            )
        ]
    )
    assert sorted(i.content for i in migrated.list_items(where, 10)) == ["t3", "t4", "t5"]
    migrated.close()
    # Opening again finds nothing to move.
    again = LanceStore(tmp_path, model_id="m", dimension=4)
    assert len(again.list_items(where, 10)) == 3


def test_a_move_cut_short_after_its_first_step_finishes_on_the_next_open(
    tmp_path: Path,
) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    store.add_items(
        [
            (
                ContextItem(content="x", content_type=ContextType.OUTPUT, metadata={"n": 7}),
                unit(1, 0, 0, 0),
            )
        ]
    )
    store.close()
    _old_items_table(tmp_path)
    table = lancedb.connect(str(tmp_path)).open_table(ITEMS)
    dataset = table.to_lance()
    dataset.add_columns(_converted, read_columns=["metadata"])  # the first step alone
    migrated = LanceStore(tmp_path, model_id="m", dimension=4)
    assert "metadata_json" not in migrated.items.schema.names
    (item,) = migrated.list_items(ItemFilter(metadata=(parse_condition("n == 7"),)), 10)
    assert item.metadata == {"n": 7}


def test_archived_rows_keep_filterable_metadata(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    items = store.add_items(
        [
            (
                ContextItem(content=f"a{i}", content_type=ContextType.OUTPUT, metadata={"n": i}),
                unit(1, 0, 0, 0),
            )
            for i in range(3)
        ]
    )
    store.archive_items([i.id for i in items], datetime.now(UTC))
    where = ItemFilter(metadata=(parse_condition("n >= 1"),))
    hits = store.archive_search(np.array(unit(1, 0, 0, 0)), 10, where)
    assert sorted(item.content for item, _, _ in hits) == ["a1", "a2"]
    assert {item.metadata["n"] for item, _, _ in hits} == {1, 2}
