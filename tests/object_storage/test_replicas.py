"""Replicas: ``serve --transport http`` processes over one store on object storage (a local
S3 endpoint), driven by the real MCP client."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections import Counter
from pathlib import Path

import anyio
import httpx
import mcp
import pytest
import yaml

from ralph_context import Engine
from ralph_context.config import Settings
from ralph_context.models import ContextItem, ContextType
from ralph_context.object_location import ObjectLocation
from ralph_context.storage.replicas.forwarding import FORWARD_PATH, encode_pairs
from ralph_context.storage.replicas.lease import LEASE_OBJECT
from tests.helpers import Loader, SettingsFactory
from tests.server.mcp_scenario import call
from tests.server_process import owner_client, owner_headers, start_http_server


@pytest.fixture
def anyio_backend() -> str:
    """The replicas are server subprocesses (seconds each); this process only drives their
    MCP clients, and the engine's trio coverage lives elsewhere."""
    return "asyncio"


def replica_config(folder: Path, store: ObjectLocation) -> Path:
    """A ``ralph.yaml`` for a replica of ``store`` (each replica looks for the others'
    writes every 0.5 s; lifecycle passes off, so only the test's writes change the store)."""
    storage = {"path": store.uri, "options": store.lance_options, "refresh_seconds": 0.5}
    section = {"storage": storage, "lifecycle": {"auto_run": False}}
    config = folder / "ralph.yaml"
    config.write_text(yaml.safe_dump({"learning": {"mcp_context": section}}), encoding="utf-8")
    return config


def reader_settings(make_settings: SettingsFactory, store: ObjectLocation) -> Settings:
    """Settings of an engine in this process that reads what the replicas wrote to
    ``store`` (lifecycle passes off: it changes nothing)."""
    return make_settings(
        storage={"path": store.uri, "options": store.lance_options},
        lifecycle={"auto_run": False},
    )


async def seconds_until_found(client: mcp.Client, query: str, item_id: str) -> float:
    """How long until a search for ``query`` through ``client`` returns ``item_id``.

    Raises:
        AssertionError: Not within 10 s.
    """
    started = time.monotonic()
    for _ in range(400):
        answer = await call(client, "get_relevant_context", query=query)
        if item_id in {entry["item"]["id"] for entry in answer["items"]}:
            return time.monotonic() - started
        await anyio.sleep(0.025)
        if time.monotonic() - started > 10:
            break
    raise AssertionError(f"{item_id} not found within 10 s")


async def test_a_write_on_one_replica_is_found_on_the_other(
    tmp_path: Path, s3_store: ObjectLocation
) -> None:
    config = replica_config(tmp_path, s3_store)
    a, url_a = start_http_server(config)
    b, url_b = start_http_server(config)
    try:
        with anyio.fail_after(120):
            async with owner_client(url_a, config) as on_a, owner_client(url_b, config) as on_b:
                delays = []
                for n in range(3):
                    text = f"replica note {n}: the release train leaves on thursdays"
                    stored = await call(on_a, "store_context", content=text, context_type="output")
                    delays.append(await seconds_until_found(on_b, text, stored["id"]))
                # And the other way round.
                text = "b's own note"
                stored = await call(on_b, "store_context", content=text, context_type="output")
                delays.append(await seconds_until_found(on_a, text, stored["id"]))
    finally:
        log_a, log_b = a.stop(), b.stop()
    assert "Traceback" not in log_a + log_b
    assert len(delays) == 4


async def test_a_replica_killed_mid_write_loses_no_acknowledged_item(
    tmp_path: Path,
    s3_store: ObjectLocation,
    make_settings: SettingsFactory,
    shared_model: Loader,
) -> None:
    config = replica_config(tmp_path, s3_store)
    doomed, url = start_http_server(config)
    survivor, url_b = start_http_server(config)
    acknowledged: dict[str, str] = {}  # item id -> text
    texts = {f"write-{n}": f"finding {n}: the flaky test is order dependent" for n in range(40)}
    answered: set[str] = set()  # keys whose write was acknowledged
    try:
        with anyio.fail_after(180):

            async def write(client: mcp.Client, key: str) -> None:
                stored = await call(
                    client,
                    "store_context",
                    content=texts[key],
                    context_type="output",
                    idempotency_key=key,
                )
                acknowledged[stored["id"]] = texts[key]
                answered.add(key)

            async def write_unless_refused(client: mcp.Client, key: str) -> None:
                # Refused (past the replica's bound on calls in flight, 6 a core, it answers
                # 429) or cut off by the kill: not acknowledged, so retried below. Raising
                # here cancelled the task group before the kill, and the "killed" replica
                # kept writing beside the survivor.
                with contextlib.suppress(Exception):
                    await write(client, key)

            keys = list(texts)
            with contextlib.suppress(Exception):  # the client's own task group, on the kill
                async with owner_client(url, config) as client:
                    for key in keys[:8]:
                        await write(client, key)
                    async with anyio.create_task_group() as group:
                        # Writes keep coming while the replica is killed (SIGKILL).
                        for key in keys[8:]:
                            group.start_soon(write_unless_refused, client, key)
                        await anyio.sleep(0.3)
                        doomed.kill()
                        # Their answers can never come now.
                        group.cancel_scope.cancel()
            # The retries below start with the replica dead, not still writing.
            assert doomed.wait(timeout=30) == -signal.SIGKILL
            assert len(answered) >= 8
            assert len(answered) < len(keys), "the kill came after every write"
            first_answers = set(answered)
            # The client retries what was not acknowledged on the survivor, same keys.
            async with owner_client(url_b, config) as client:
                for key in keys:
                    if key not in answered:
                        await write(client, key)
    finally:
        doomed.stop(kill=True)
        survivor.stop()
    settings = reader_settings(make_settings, s3_store)
    async with Engine(settings, model_loader=shared_model) as engine:
        for item_id, text in acknowledged.items():
            assert (await engine.get(item_id)).content == text
        # Every write is there: none lost. A write acknowledged before the kill is there
        # once. One in flight at the kill may be there twice, under the id its key claimed:
        # its commit can reach the bucket after the killed process is gone and after the
        # retry on the survivor looked for that id (README, "Many machines").
        stored = await engine.browse(limit=100)
    contents = Counter(item.content for item in stored.items)
    assert set(contents) == set(texts.values())
    twice = {text for text, n in contents.items() if n > 1}
    assert not twice & {texts[key] for key in first_answers}
    for text in twice:
        assert len({item.id for item in stored.items if item.content == text}) == 1


async def test_every_replicas_writes_are_committed_by_the_lease_holder(
    tmp_path: Path,
    s3_store: ObjectLocation,
    make_settings: SettingsFactory,
    shared_model: Loader,
) -> None:
    config = replica_config(tmp_path, s3_store)
    a, url_a = start_http_server(config)
    b, url_b = start_http_server(config)
    holder = url_a.removesuffix("/mcp")
    route = f"{url_b.removesuffix('/mcp')}{FORWARD_PATH.format(namespace='default')}"
    try:
        with anyio.fail_after(120):
            async with owner_client(url_a, config) as on_a, owner_client(url_b, config) as on_b:
                await call(on_a, "store_context", content="a came first", context_type="task")
                for n in range(3):
                    text = f"b's note {n}: the nightly build needs the cache warmed"
                    stored = await call(on_b, "store_context", content=text, context_type="output")
                    # Read back at once on b: it checked out the holder's commit.
                    found = await call(on_b, "get_relevant_context", query=text)
                    assert stored["id"] in {entry["item"]["id"] for entry in found["items"]}
                    text = f"a's note {n}: the release waits for the changelog"
                    await call(on_a, "store_context", content=text, context_type="output")
            lease = s3_store.read(LEASE_OBJECT)
            assert lease is not None and json.loads(lease[0])["address"] == holder
            async with httpx.AsyncClient(headers=owner_headers(config)) as http:
                # b does not hold the lease: it refuses a forwarded write (the sender commits).
                item = ContextItem(content="x", content_type=ContextType.OUTPUT)
                body = {"items": encode_pairs([(item, None)])}
                assert (await http.post(route, json=body)).status_code == 409
                garbage = await http.post(route, json={"items": [{"item": {"content": 3}}]})
                assert garbage.status_code == 400 and "not a forwarded write" in garbage.text
    finally:
        log_a, log_b = a.stop(), b.stop()
    assert "Traceback" not in log_a + log_b
    assert "write_not_forwarded" not in log_b
    settings = reader_settings(make_settings, s3_store)
    async with Engine(settings, model_loader=shared_model) as engine:
        stored_items = (await engine.browse(limit=100)).items
    # One committer placed them all: each has a place of its own in the store's order
    # (two replicas committing each their own gave the same places twice).
    places = [item.sequence for item in stored_items]
    assert len(stored_items) == 7
    assert len(set(places)) == 7


async def test_the_holder_killed_under_forwarded_writes_loses_none_of_them(
    tmp_path: Path,
    s3_store: ObjectLocation,
    make_settings: SettingsFactory,
    shared_model: Loader,
) -> None:
    """Writes sent on to the lease holder when it is SIGKILLed: those whose answer never
    came are committed by their own replica under their key; every acknowledged write is
    stored, once."""
    config = replica_config(tmp_path, s3_store)
    holder, url_holder = start_http_server(config)
    sender, url_sender = start_http_server(config)
    texts = {f"sent-{n}": f"sent {n}: the canary failed on the eu region" for n in range(30)}
    acknowledged: dict[str, str] = {}  # item id -> key
    errors: list[str] = []
    try:
        with anyio.fail_after(180):
            async with owner_client(url_holder, config) as on_holder:
                await call(on_holder, "store_context", content="the holder", context_type="task")

            async def write(client: mcp.Client, key: str) -> None:
                try:
                    stored = await call(
                        client,
                        "store_context",
                        content=texts[key],
                        context_type="output",
                        idempotency_key=key,
                    )
                except Exception as exc:  # refused past the bound on calls in flight
                    errors.append(f"{type(exc).__name__}: {exc}")
                    return
                acknowledged[stored["id"]] = key

            async with owner_client(url_sender, config) as client:
                async with anyio.create_task_group() as group:
                    for key in texts:
                        group.start_soon(write, client, key)
                        await anyio.sleep(0.02)
                        if key == "sent-10":
                            holder.kill()
                for key in texts:  # what was refused, again (same key)
                    if key not in acknowledged.values():
                        await write(client, key)
    finally:
        holder.stop(kill=True)
        log = sender.stop()
    assert "Traceback" not in log
    assert sorted(acknowledged.values()) == sorted(texts)
    settings = reader_settings(make_settings, s3_store)
    async with Engine(settings, model_loader=shared_model) as engine:
        stored_items = (await engine.browse(limit=100)).items
    by_text: dict[str, set[str]] = {}
    for item in stored_items:
        by_text.setdefault(item.content, set()).add(item.id)
    for item_id, key in acknowledged.items():
        assert by_text[texts[key]] == {item_id}  # stored, and under one id only
