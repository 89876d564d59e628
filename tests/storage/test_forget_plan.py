"""A forget's plan (``store_forget``): written before anything is deleted, removed after the
purge; one left behind (the process died in between) is carried out again by the next
writer's open, purge included, and a reader's open leaves it for the writer."""

from __future__ import annotations

from pathlib import Path

from ralph_context.config import StorageSettings
from ralph_context.lifecycle.forgetting import check_selection
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.lifecycle.tombstones import CONTENT, ID
from ralph_context.storage.store.forget import PENDING
from tests.helpers import files_holding, marker
from tests.storage.test_scrub import hundred


def test_a_plan_left_behind_is_carried_out_at_the_next_writers_open(tmp_path: Path) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    secret = marker()
    stored = store.add_items(hundred(secret))
    store.maintain()
    doomed = stored[42]
    store.begin_forget(store.forgettable(check_selection([doomed.id], None, None, None)))
    # Deleted and tombstoned, not yet purged: the process dies here.
    plan = (tmp_path / PENDING).read_text(encoding="utf-8")
    assert doomed.id in plan and secret not in plan  # ids and digests, never the text
    assert files_holding(tmp_path, secret)
    store.close()

    reader = LanceStore.configured(tmp_path, StorageSettings(), model=("m", 4), read_only=True)
    assert (tmp_path / PENDING).exists()  # a reader leaves it to the writer
    writer = LanceStore.configured(tmp_path, StorageSettings(), model=("m", 4))

    assert not (tmp_path / PENDING).exists()
    assert files_holding(tmp_path, secret) == []
    assert writer.get_items([doomed.id]) == [] and writer.stats().items == 99
    assert writer.tombstones.forgotten(ID, doomed.id)
    assert writer.tombstones.forgotten(CONTENT, doomed.content)
    writer.close()
    reader.close()
