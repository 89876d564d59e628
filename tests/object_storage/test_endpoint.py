"""The local S3 endpoint keeps S3's promise the replicas' commits rest on: of two
create-if-absent PUTs of one object, one wins (``benchmarks/replicas/moto_atomic``)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.replicas.endpoint import Endpoint, Requests
from benchmarks.serving import free_port
from ralph_context.object_location import ObjectLocation


@pytest.fixture
def atomic_moto() -> Iterator[str]:
    """An in-process moto server patched as ``moto_atomic`` patches the endpoint's."""
    from moto.server import ThreadedMotoServer

    import benchmarks.replicas.moto_atomic  # noqa: F401  (patches moto's S3 PUT)

    port = free_port()
    server = ThreadedMotoServer("127.0.0.1", port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def test_of_two_create_if_absent_puts_of_one_object_one_wins(
    atomic_moto: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3  # type: ignore[import-untyped]
    from moto.s3.models import S3Backend

    bucket = f"test-{uuid.uuid4().hex[:12]}"
    boto3.client(
        "s3",
        endpoint_url=atomic_moto,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    ).create_bucket(Bucket=bucket)
    options = {
        "aws_endpoint": atomic_moto,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_region": "us-east-1",
        "allow_http": "true",
    }
    place = ObjectLocation(f"s3://{bucket}/store", tuple(sorted(options.items())))
    outcomes: list[str | None] = []

    def create(data: bytes) -> None:
        outcomes.append(place.write("manifest", data, replacing=""))

    second = threading.Thread(target=create, args=(b"second",))
    store = S3Backend.put_object

    def put_object(backend: Any, *args: Any, **kwargs: Any) -> Any:
        # The first PUT, its condition checked and its object not yet stored, lets the
        # second one in: moto alone answered both with 200, the later replacing the
        # earlier (two replicas committing the same table version, one commit lost).
        if not second.is_alive() and not outcomes:
            second.start()
            second.join(timeout=2)
        return store(backend, *args, **kwargs)

    monkeypatch.setattr(S3Backend, "put_object", put_object)
    create(b"first")
    second.join(timeout=30)
    assert not second.is_alive()
    assert sum(outcome is not None for outcome in outcomes) == 1
    found = place.read("manifest")
    assert found is not None and found[0] in (b"first", b"second")


def test_the_request_count_tells_refused_commits_of_the_items_table_from_the_rest(
    tmp_path: Path,
) -> None:
    lines = [
        '"PUT /b/s/context_items.lance/_versions/3.manifest HTTP/1.1" 200 -',
        '"PUT /b/s/context_items.lance/_versions/4.manifest HTTP/1.1" 412 -',
        '"PUT /b/s/usage.lance/_versions/9.manifest HTTP/1.1" 412 -',
        '"PUT /b/s/usage.lance/_versions/9.manifest HTTP/1.1" \x1b[32m200\x1b[0m -',
        '"GET /b/s/context_items.lance/_versions/4.manifest HTTP/1.1" 200 -',
    ]
    log = tmp_path / "moto.log"
    log.write_text("".join(f"127.0.0.1 - - [28/Nov/2026] {line}\n" for line in lines))
    endpoint = Endpoint(ObjectLocation("s3://b/s"), request_log=log)
    counted = endpoint.requests()
    assert counted == Requests(
        total=5, commits=2, refused_commits=2, item_commits=1, item_refused=1
    )
    assert counted - Requests(1, 1, 1, 1, 1) == Requests(4, 1, 1, 0, 0)
