"""User strings reach LanceDB only as quoted literals, and match exactly themselves."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralph_context.models import ContextItem, ContextState, ContextType
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.table.filters import ItemFilter, sql_string
from ralph_context.validation import check_tags


def test_quotes_are_doubled_so_a_tag_cannot_close_its_literal() -> None:
    assert sql_string("x' OR 1=1 --") == "'x'' OR 1=1 --'"
    clause = ItemFilter(tags_any=("x' OR 1=1 --",)).to_sql()
    assert clause == "(array_has_any(tags, ['x'' OR 1=1 --']))"


def test_filter_combines_typed_conditions() -> None:
    clause = ItemFilter(
        types=(ContextType.ERROR, ContextType.SKILL),
        states=(ContextState.ACTIVE,),
        min_iteration=3,
        max_iteration=9,
    ).to_sql()
    assert clause == (
        "(content_type IN ('error', 'skill')) AND (state IN ('active')) AND "
        "(created_iteration >= 3) AND (created_iteration <= 9)"
    )
    assert ItemFilter().to_sql() is None


@pytest.fixture(scope="module")
def store() -> Iterator[LanceStore]:
    yield LanceStore(None, model_id="unit", dimension=4)


# Printable text incl. quotes, backslashes, SQL and unicode; control characters are refused
# by validation before they could reach a filter.
tag_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40
).filter(lambda t: t.strip() == t and t != "")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tag=tag_text)
def test_any_valid_tag_is_stored_and_filtered_literally(store: LanceStore, tag: str) -> None:
    (tag,) = check_tags([tag])
    decoy = ContextItem(content="decoy", content_type=ContextType.OUTPUT, tags=(tag + "x",))
    target = ContextItem(content="target", content_type=ContextType.OUTPUT, tags=(tag,))
    vector = np.full(4, 0.5, dtype=np.float32)
    store.add_items([(decoy, vector), (target, vector)])
    found = store.list_items(ItemFilter(tags_any=(tag,)), limit=100)
    assert [item.id for item in found if item.id in (decoy.id, target.id)] == [target.id]
    assert all(tag in item.tags for item in found)
    assert store.get_items([target.id])[0].tags == (tag,)


@pytest.fixture(scope="module")
def prose_store() -> LanceStore:
    store = LanceStore(None, model_id="unit", dimension=4)
    words = "build failed because the cache key missed the lockfile hash".split()
    store.add_items(
        [
            (ContextItem(content=" ".join(words[i:] + words[:i]), content_type=kind), None)
            for i, kind in enumerate([ContextType.OUTPUT, ContextType.ERROR] * 5)
        ]
    )
    return store


def test_text_search_finds_words_and_honours_the_type_filter(prose_store: LanceStore) -> None:
    hits = prose_store.text_search("lockfile", 20, ItemFilter(types=(ContextType.ERROR,)))
    assert len(hits) == 5
    assert all(item.content_type is ContextType.ERROR for item, _, _ in hits)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(min_size=1, max_size=60))
def test_text_search_accepts_any_query_without_error(prose_store: LanceStore, text: str) -> None:
    hits = prose_store.text_search(text, 5, ItemFilter(types=(ContextType.OUTPUT,)))
    assert all(item.content_type is ContextType.OUTPUT for item, _, _ in hits)
