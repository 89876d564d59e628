"""Object-storage locations and the maintenance lease, against a local S3 endpoint."""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from ralph_context import namespaces
from ralph_context.config import Settings
from ralph_context.errors import IdempotencyConflict
from ralph_context.object_location import ObjectLocation, is_object_uri, read_text, write_text
from ralph_context.storage.maintenance.upkeep import kept_for_readers
from ralph_context.storage.replicas.lease import LEASE_OBJECT, MaintenanceLease
from ralph_context.storage.table.requests import SEALED, Claim, RequestLog
from tests.cli.test_cli import cli


def test_uris_are_told_from_folders() -> None:
    assert is_object_uri("s3://bucket/a/b")
    assert is_object_uri("s3+ddb://bucket/a?ddbTableName=commits")
    assert is_object_uri("gs://bucket")
    assert not is_object_uri("/tmp/store")
    assert not is_object_uri("http://example.com/store")
    located = ObjectLocation("s3+ddb://bucket/a?ddbTableName=t") / "namespaces" / "x"
    assert str(located) == "s3+ddb://bucket/a/namespaces/x?ddbTableName=t"
    assert located.name == "x"
    with pytest.raises(ValueError, match="not an object-storage URI"):
        ObjectLocation("ftp://bucket/a")


def test_settings_keep_a_uri_as_it_is_and_refuse_unknown_schemes() -> None:
    settings = Settings.load(None).with_overrides(
        storage={"path": "s3://bucket/team", "options": {"aws_region": "eu-west-1"}}
    )
    root = settings.store_root()
    assert isinstance(root, ObjectLocation)
    assert root.uri == "s3://bucket/team"
    assert root.lance_options == {"aws_region": "eu-west-1"}
    assert str(namespaces.directory(root, "web")) == "s3://bucket/team/namespaces/web"
    # Local files of the project (the hook's cache) stay local.
    assert settings.local_folder() == settings.project_root / ".agent"
    assert isinstance(Settings.load(None).store_root(), Path)
    with pytest.raises(Exception, match="is not a folder or s3://bucket/prefix"):
        Settings.load(None).with_overrides(storage={"path": "ftp://bucket/team"})


def test_small_files_and_sizes_on_object_storage(s3_store: ObjectLocation) -> None:
    assert read_text(s3_store, "store.json") is None
    write_text(s3_store, "store.json", '{"dimension": 384}')
    assert read_text(s3_store, "store.json") == '{"dimension": 384}'
    write_text(s3_store / "namespaces" / "web", "store.json", "{}")
    write_text(s3_store / "namespaces" / "ops", "store.json", "{}")
    assert namespaces.names(s3_store) == ["default", "ops", "web"]
    # The default namespace's size is its own, not its nested namespaces'.
    assert namespaces.disk_bytes(s3_store) == len('{"dimension": 384}')
    assert s3_store.size_bytes() == len('{"dimension": 384}') + 4


def test_writes_conditional_on_the_version_read(s3_store: ObjectLocation) -> None:
    first = s3_store.write("x", b"1", replacing="")
    assert first
    assert s3_store.write("x", b"2", replacing="") is None  # it exists already
    second = s3_store.write("x", b"2", replacing=first)
    assert second
    assert s3_store.write("x", b"3", replacing=first) is None  # changed since read
    assert s3_store.read("x") == (b"2", second)


def test_an_unreachable_store_is_an_os_error() -> None:
    nowhere = ObjectLocation(
        "s3://bucket/store",
        (
            ("aws_endpoint", "http://127.0.0.1:9"),
            ("aws_region", "us-east-1"),
            ("aws_access_key_id", "x"),
            ("aws_secret_access_key", "x"),
            ("allow_http", "true"),
            ("timeout", "2s"),
        ),
    )
    with pytest.raises(OSError, match=re.escape("s3://bucket/store/store.json")):
        nowhere.read("store.json")
    # ... and a lease that cannot be reached is not held.
    assert not MaintenanceLease(nowhere, 30).take()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_one_replica_holds_the_lease_until_it_lapses_or_is_released(
    s3_store: ObjectLocation,
) -> None:
    clock = Clock()
    a = MaintenanceLease(s3_store, 30, holder="a", clock=clock)
    b = MaintenanceLease(s3_store, 30, holder="b", clock=clock)
    assert a.take()
    assert not b.take()
    clock.now += 20
    assert a.take()  # renewed: lapses 30 s from now
    clock.now += 20
    assert not b.take()
    assert a.holder_now() == "a"
    clock.now += 31  # a stopped renewing (it died)
    assert b.take()
    assert not a.take()
    assert a.holder_now() == "b"
    b.release()
    assert a.holder_now() is None
    assert a.take()


def test_an_unreadable_lease_object_counts_as_lapsed(s3_store: ObjectLocation) -> None:
    s3_store.write(LEASE_OBJECT, b"not json")
    assert MaintenanceLease(s3_store, 30, holder="a").take()


def test_of_replicas_racing_for_a_free_lease_exactly_one_wins(s3_store: ObjectLocation) -> None:
    for round_ in range(3):
        leases = [MaintenanceLease(s3_store / str(round_), 30) for _ in range(6)]
        won: list[bool] = []
        start = threading.Barrier(len(leases))

        def race(lease: MaintenanceLease, start: threading.Barrier, won: list[bool]) -> None:
            start.wait()
            won.append(lease.take())

        threads = [threading.Thread(target=race, args=(lease, start, won)) for lease in leases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(won) == [False] * 5 + [True]


def test_cleanup_keeps_every_version_a_replica_may_still_read() -> None:
    now = datetime(2026, 11, 26, 12, 0, 0)

    def at(minutes_ago: float) -> datetime:
        return now - timedelta(minutes=minutes_ago)

    versions = [
        {"version": 1, "timestamp": at(600)},
        {"version": 2, "timestamp": at(500)},  # read until version 3, 10 s ago
        {"version": 3, "timestamp": at(10 / 60)},
    ]
    five = timedelta(minutes=5)
    kept = kept_for_readers(versions, five, timedelta(minutes=1), now)
    # Version 2 is older than the retention but was replaced 10 s ago: it stays (and
    # version 1, replaced 500 minutes ago, may go).
    assert now - kept < at(500)
    assert now - kept > at(600)
    # Once every replacement is older than the grace, the retention alone decides.
    assert kept_for_readers(versions[:2], five, timedelta(minutes=1), now) == five


def test_the_first_replica_to_claim_an_idempotency_key_owns_it(s3_store: ObjectLocation) -> None:
    a, b = RequestLog(None, claims=s3_store), RequestLog(None, claims=s3_store)
    assert b.find("retry-me") is None
    first = a.claim("retry-me", "item-from-a", "print-a")
    assert first.target == "item-from-a" and first.target_for("retry-me", "print-a")
    # b, asked the same key later (a client retrying on another replica), gets a's item.
    assert b.find("retry-me") == first
    assert b.claim("retry-me", "item-from-b", "print-a").target == "item-from-a"
    # The key and its fingerprint are digests under the store's key (store.key), never
    # the client's text: the claim's name and content hold neither.
    assert first.fingerprint is not None and first.fingerprint.startswith(SEALED)
    (name,) = [n for n in _names(s3_store) if n.startswith("request_key_claims/")]
    held = s3_store.read(name)
    assert held is not None and "retry-me" not in name and b"print-a" not in held[0]
    # ... unless the retry is another request: then the key is refused there too.
    with pytest.raises(IdempotencyConflict, match="'retry-me' was used for a different request"):
        b.put("retry-me", "item-from-b", "print-b")
    # Any text is a key: the claim's object name is a digest of it.
    odd = "x' OR 1=1 -- /../\\u0000"
    assert a.claim(odd, "odd-item").target == "odd-item" and b.find(odd) == Claim("odd-item")


def _names(location: ObjectLocation) -> list[str]:
    import obstore

    return [o["path"] for batch in obstore.list(location._store()) for o in batch]


def test_a_claim_object_written_before_fingerprints_answers_any_request(
    s3_store: ObjectLocation,
) -> None:
    """Claims of earlier versions hold the bare target: they keep today's answer."""
    log = RequestLog(None, claims=s3_store)
    assert s3_store.write(log.claim_name("old-key"), b"item-before", replacing="") is not None
    claim = log.find("old-key")
    assert claim == Claim("item-before", None)
    assert claim.target_for("old-key", "any-print") == "item-before"
    assert log.claim("old-key", "item-now", "any-print") == Claim("item-before", None)


def test_a_command_on_an_unreachable_store_says_why(tmp_path: Path) -> None:
    config = tmp_path / "ralph.yaml"
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: s3://bucket/store\n"
        "      options: {aws_endpoint: 'http://127.0.0.1:9', aws_region: us-east-1,"
        " aws_access_key_id: x, aws_secret_access_key: x, allow_http: 'true', timeout: 1s}\n",
        encoding="utf-8",
    )
    done = cli("stats", "--config", str(config), check=False)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: storage is down: PermanentFailure: cannot open the store at")
    assert "s3://bucket/store/store.json" in last
