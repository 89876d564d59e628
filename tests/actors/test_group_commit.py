"""Group commit (``actors.storage.group``): keyed writes queued together make one commit of
the items table, repeated keys inside one group stand for their first, and a crowded store
waits a moment for the next write instead of committing each alone."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from ralph_context import Engine
from ralph_context.actors.storage.group import MAX_WAIT, Crowding
from ralph_context.actors.storage.requests import AddItems, StorageRequest
from ralph_context.models import ContextItem, ContextType
from ralph_context.runtime import Envelope
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.table.requests import Claim
from tests.helpers import Loader, SettingsFactory, unit


def _item(text: str) -> ContextItem:
    return ContextItem(content=text, content_type=ContextType.OUTPUT)


def test_keyed_writes_in_one_group_are_one_append_and_a_repeated_key_stands_for_its_first(
    tmp_path: Path,
) -> None:
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    try:
        (known, _) = store.add_keyed(_item("stored before"), unit(1, 0, 0, 0), "k-old")
        before = store.items.version
        fresh_a, fresh_b, again_a, old = (
            _item("a"),
            _item("b"),
            _item("a, retried"),
            _item("old, retried"),
        )
        answers = store.add_keyed_many(
            [
                (fresh_a, unit(0, 1, 0, 0), "k-a", None),
                (fresh_b, unit(0, 0, 1, 0), "k-b", None),
                (again_a, unit(0, 1, 0, 0), "k-a", None),
                (old, unit(1, 0, 0, 0), "k-old", None),
            ]
        )
        stored = [answer for answer in answers if not isinstance(answer, Exception)]
        assert [(item.id, written) for item, written in stored] == [
            (fresh_a.id, True),
            (fresh_b.id, True),
            (fresh_a.id, False),
            (known.id, False),
        ]
        assert store.items.version == before + 1  # one append for both new items
        assert sorted(i.content for i in store.get_items(store.all_ids())) == [
            "a",
            "b",
            "stored before",
        ]
    finally:
        store.close()
    reopened = LanceStore(tmp_path, model_id="m", dimension=4)
    try:  # the keys outlive the process, each naming its first item
        assert reopened.requests.find("k-a") == Claim(fresh_a.id)
        assert reopened.requests.find("k-b") == Claim(fresh_b.id)
    finally:
        reopened.close()


@pytest.mark.model
async def test_keyed_stores_sent_at_once_commit_together(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        await engine.store("opens the table", "output")
        items = engine._require_storage().store.items
        before = items.version
        stored: dict[int, str] = {}
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for n in range(12):

                    async def one(n: int = n) -> None:
                        key = f"k-{n % 10}"  # keys 0 and 1 are sent twice
                        item = await engine.store(f"note {n % 10}", "output", idempotency_key=key)
                        stored[n] = item.id

                    group.start_soon(one)
        commits = items.version - before
        assert stored[10] == stored[0] and stored[11] == stored[1]
        assert len(set(stored.values())) == 10
        assert (await engine.stats()).items == 11
        # Twelve writes; the first commits alone while the rest queue, then they go in few.
        assert commits <= 4, commits


Write = Envelope[StorageRequest, object]


class _Lane:
    def __init__(self) -> None:
        self.inbox: list[Write] = []

    @property
    def queued(self) -> int:
        return len(self.inbox)

    def take_queued(self) -> Write | None:
        return self.inbox.pop(0) if self.inbox else None


_OPEN: list[Write] = []


def _write(text: str) -> Write:
    send, receive = anyio.create_memory_object_stream[Any](1)
    receive.close()  # nobody listens: answering it is a no-op
    envelope: Write = Envelope(AddItems(((_item(text), None),)), send)
    _OPEN.append(envelope)
    return envelope


def _contents(batch: Sequence[Write]) -> list[str]:
    return [cast(AddItems, e.request).pairs[0][0].content for e in batch]


async def test_a_crowded_store_waits_a_moment_for_the_next_write_and_a_lone_writer_never_does() -> (
    None
):
    crowding, lane = Crowding(), _Lane()
    first = [_write("first")]
    # A lone writer: nothing ever queued behind its commits, so no wait even with a
    # write about to arrive.
    crowding.committed(0.2, queued_behind=False)
    async with anyio.create_task_group() as group:

        async def arrive() -> None:
            await anyio.sleep(0.01)
            lane.inbox.append(_write("second"))

        group.start_soon(arrive)
        assert await crowding.gather(lane, first) == first
    lane.inbox.clear()
    # Crowded (a write queued behind the last commit): the batch waits for the next one.
    crowding.committed(10.0, queued_behind=True)
    assert crowding.wait_s() == MAX_WAIT  # capped
    crowding.committed(0.2, queued_behind=True)
    assert crowding.wait_s() == pytest.approx(0.1)  # half the last commit
    async with anyio.create_task_group() as group:
        group.start_soon(arrive)
        gathered = await crowding.gather(lane, first)
    assert _contents(gathered) == ["first", "second"]
    # Nobody comes: the wait ends after at most half the last commit (capped).
    started = anyio.current_time()
    assert await crowding.gather(lane, first) == first
    assert anyio.current_time() - started < 1.0
    for envelope in _OPEN:
        envelope.abandon()
