"""The paraphrase set keeps its promises: enough queries, real targets, and no word in common
between a query and what it asks for."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from benchmarks.retrieval.paraphrase_data import STORES, Item, shared_stems
from benchmarks.retrieval.paraphrase_types import content_words, parse_items, parse_queries
from ralph_context.models import ContextType


def test_the_set_has_at_least_120_answerable_and_24_absent_queries() -> None:
    answerable = [q for s in STORES for q in s.queries if not q.absent]
    assert len(answerable) >= 120
    assert sum(q.absent for s in STORES for q in s.queries) >= 24
    assert len(STORES) == 6 and len({s.project for s in STORES}) == 6
    for store in STORES:
        assert sum(q.absent for q in store.queries) >= 4, store.project
        assert 30 <= len(store.items) <= 45, store.project


def test_keys_are_unique_and_every_target_is_an_item_of_its_store() -> None:
    for store in STORES:
        keys = Counter(item.key for item in store.items)
        assert [k for k, n in keys.items() if n > 1] == [], store.project
        missing = [t for q in store.queries for t in q.targets if t not in keys]
        assert missing == [], store.project


def test_no_two_queries_or_items_of_a_store_are_the_same_text() -> None:
    for store in STORES:
        questions = [q.text for q in store.queries]
        assert len(set(questions)) == len(questions), store.project
        contents = [item.content for item in store.items]
        assert len(set(contents)) == len(contents), store.project


def test_no_query_shares_a_content_word_or_stem_with_its_targets() -> None:
    clashes = [
        (store.project, query.text, target, sorted(shared))
        for store in STORES
        for query in store.queries
        for target in query.targets
        if (shared := shared_stems(query.text, _item(store.items, target).text))
    ]
    assert clashes == []


def test_at_least_half_the_answerable_queries_share_a_word_with_a_decoy() -> None:
    answerable = [(s, q) for s in STORES for q in s.queries if not q.absent]
    decoyed = [
        q
        for store, q in answerable
        if any(shared_stems(q.text, i.text) for i in store.items if i.key not in q.targets)
    ]
    assert len(decoyed) >= len(answerable) / 2


def test_stores_are_written_in_iteration_order_with_every_kind_of_item() -> None:
    for store in STORES:
        iterations = [item.iteration for item in store.items]
        assert iterations == sorted(iterations), store.project
        assert iterations[0] == 1 and 10 <= store.last_iteration <= 25, store.project
        assert {item.type for item in store.items} == set(ContextType), store.project


def test_a_few_queries_accept_either_of_two_targets_most_exactly_one() -> None:
    counts = Counter(len(q.targets) for s in STORES for q in s.queries if not q.absent)
    assert set(counts) <= {1, 2} and 0 < counts[2] < counts[1] / 10


def test_the_rule_splits_identifiers_and_matches_plurals_and_prefixes() -> None:
    assert content_words("the pool_size of QueuePool in app/db.py") == {
        "pool",
        "size",
        "queue",
        "app",
        "db",
        "py",
    }
    assert shared_stems("What about the pools?", "the connection pool") == {"pools"}
    assert shared_stems("how does pooling work", "pool_size=5") == {"pooling"}
    assert shared_stems("which fix", "Fixed by retrying") == {"fix"}
    assert shared_stems("configuring", "configuration") == {"configuring"}  # five letters
    assert shared_stems("the package list", "requirements.txt: requests==2.31") == set()
    assert shared_stems("what is it for", "it is what it is") == set()  # stop words only


def test_entries_are_parsed_with_their_continuation_lines() -> None:
    (item,) = parse_items(
        """
err-x error 3 db,tests: `KeyError: 'a'` in x.py
    line 4. Fixed: the key.
"""
    )
    assert item.key == "err-x" and item.type is ContextType.ERROR and item.iteration == 3
    assert item.content == "`KeyError: 'a'` in x.py line 4. Fixed: the key."
    assert item.tags == ("db", "tests") and item.text.endswith("key. db tests")
    both, absent = parse_queries("a b: either\n    of two?\n-: nothing answers")
    assert both.targets == ("a", "b") and both.text == "either of two?"
    assert absent.absent and absent.text == "nothing answers"


def _item(items: Sequence[Item], key: str) -> Item:
    return next(i for i in items if i.key == key)
