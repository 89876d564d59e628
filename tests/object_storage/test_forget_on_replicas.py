"""Forget is final on every replica (issue 62): two stores on one bucket (moto's S3), as two
replicas are; one forgets an item the other knows the idempotency key of, and the other's
retry under that key is refused instead of storing it again under its old id."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ralph_context.errors import ItemForgotten
from ralph_context.lifecycle.forgetting import check_selection
from ralph_context.models import ContextItem, ContextType
from ralph_context.object_location import ObjectLocation
from ralph_context.storage.lance_store import LanceStore
from tests.helpers import marker, unit


def test_a_key_forgotten_on_one_replica_is_refused_on_the_other(
    s3_store: ObjectLocation,
) -> None:
    first = LanceStore(s3_store, model_id="m", dimension=4, refresh=timedelta(0))
    other = LanceStore(s3_store, model_id="m", dimension=4, refresh=timedelta(0))
    try:
        item = ContextItem(content=f"the token is {marker()}", content_type=ContextType.OUTPUT)
        stored, written = first.add_keyed(item, unit(1, 0, 0, 0), "retry-key", "print")
        assert written
        # The client's retry reached the other replica once: it knows the key's item.
        assert other.add_keyed(item, None, "retry-key", "print") == (stored, False)

        found = first.forgettable(check_selection([stored.id], None, None, None))
        first.begin_forget(found)
        first.scrub()
        first.end_forget()

        with pytest.raises(ItemForgotten, match="was forgotten"):
            other.add_keyed(item, unit(1, 0, 0, 0), "retry-key", "print")
        with pytest.raises(ItemForgotten):
            other.add_items([(item.model_copy(update={"id": stored.id}), None)])
        other.items.checkout_latest()
        assert other.get_items([stored.id]) == []
    finally:
        first.close()
        other.close()
