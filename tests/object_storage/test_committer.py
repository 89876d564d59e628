"""One committer for a shared store: the lease names where the holder takes the others'
writes, and a replica's ``committer()`` says where its writes go (against a local S3
endpoint; see ``storage.replicas.lease`` and ``storage.replicas.forwarding``)."""

from __future__ import annotations

import json
import socket

import numpy as np

from ralph_context.models import ContextItem, ContextType
from ralph_context.object_location import ObjectLocation
from ralph_context.storage.replicas.forwarding import Forwarder, decode_pairs, encode_pairs
from ralph_context.storage.replicas.lease import LEASE_OBJECT, MaintenanceLease
from tests.object_storage.test_location_and_lease import Clock


class CountedReads(ObjectLocation):
    """The store's location, counting reads of the lease object."""

    reads = 0

    def read(self, name: str) -> tuple[bytes, str] | None:
        if name == LEASE_OBJECT:
            CountedReads.reads += 1
        return super().read(name)


def test_a_replica_that_takes_writes_holds_a_free_lease_and_the_others_are_sent_to_it(
    s3_store: ObjectLocation,
) -> None:
    clock = Clock()
    a = MaintenanceLease(s3_store, 30, holder="a", clock=clock, address="http://10.0.0.1:8765")
    b = MaintenanceLease(s3_store, 30, holder="b", clock=clock, address="http://10.0.0.2:8765")
    plain = MaintenanceLease(s3_store, 30, holder="stdio", clock=clock)
    assert a.committer() is None  # nobody held it: a takes it and commits
    assert a.holds()
    assert b.committer() == "http://10.0.0.1:8765"
    assert plain.committer() == "http://10.0.0.1:8765"
    assert not b.holds() and not plain.holds()
    found = s3_store.read(LEASE_OBJECT)
    assert found is not None
    assert json.loads(found[0])["address"] == "http://10.0.0.1:8765"
    clock.now += 31  # a died
    assert not a.holds()
    assert plain.committer() is None  # it commits, but takes no lease it cannot serve
    assert plain.holder_now() is None
    assert b.committer() is None  # b takes writes: it takes the lapsed lease
    assert a.committer() == "http://10.0.0.2:8765"


def test_the_holder_reads_the_lease_only_once_half_its_claim_has_passed(
    s3_store: ObjectLocation,
) -> None:
    clock = Clock()
    location = CountedReads(s3_store.uri, s3_store.options)
    a = MaintenanceLease(location, 30, holder="a", clock=clock, address="http://a:1")
    CountedReads.reads = 0
    assert a.committer() is None
    taken = CountedReads.reads
    for _ in range(50):
        clock.now += 0.2  # 10 s in all: within the first half
        assert a.committer() is None
    assert CountedReads.reads == taken
    clock.now += 6  # past half: renewed
    assert a.committer() is None
    assert CountedReads.reads > taken
    clock.now += 20  # 36 s after the first claim: the renewal keeps it
    assert a.holds()
    assert MaintenanceLease(location, 30, holder="b", clock=clock).committer() == "http://a:1"


def test_a_holder_that_takes_no_writes_leaves_every_replica_to_commit_its_own(
    s3_store: ObjectLocation,
) -> None:
    clock = Clock()
    plain = MaintenanceLease(s3_store, 30, holder="stdio", clock=clock)
    assert plain.take()  # its maintenance took it
    other = MaintenanceLease(s3_store, 30, holder="b", clock=clock, address="http://b:1")
    assert other.committer() is None
    assert not other.holds()  # and it does not take a lease held by another
    assert plain.holder_now() == "stdio"


def test_a_forwarded_write_reads_back_exactly() -> None:
    item = ContextItem(
        content="the deploy waits for the schema migration",
        content_type=ContextType.OUTPUT,
        tags=("deploy",),
        metadata={"run": 3, "ok": True, "nested": {"a": [1, 2]}},
        created_iteration=4,
        source="ci",
    )
    vector = np.random.default_rng(7).standard_normal(384).astype(np.float32)
    wire = json.loads(json.dumps(encode_pairs([(item, vector), (item, None)])))
    (back, back_vector), (_, none) = decode_pairs(wire)
    assert back == item
    assert back_vector is not None and np.array_equal(back_vector, vector)
    assert back_vector.dtype == np.float32
    assert none is None


async def test_a_holder_that_cannot_be_reached_leaves_the_write_to_the_replica(
    s3_store: ObjectLocation,
) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        address = f"http://127.0.0.1:{closed.getsockname()[1]}"
    dead = MaintenanceLease(s3_store, 30, holder="dead", address=address)
    assert dead.committer() is None and dead.holds()  # it held the lease, then died
    forwarder = Forwarder(
        MaintenanceLease(s3_store, 30, holder="b"), "default", token=None, timeout=5
    )
    item = ContextItem(content="a note", content_type=ContextType.OUTPUT)
    try:
        assert await forwarder.committer() == address
        assert await forwarder.add_items([(item, None)]) is None  # commit it here
        assert await forwarder.add_keyed(item, None, "k", None) is None
        # The dead holder is passed over for a while: no connect per write.
        assert await forwarder.committer() is None
        assert (forwarder.forwarded, forwarder.fell_back) == (0, 1)
    finally:
        await forwarder.aclose()
