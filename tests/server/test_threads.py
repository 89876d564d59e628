"""Threads over MCP: ``store_context``/``store_contexts`` take ``thread`` and ``iteration``,
so what a client stores in order gets the neighbour evidence the Python API's ``source``
gives. Against the real server process over stdio, with the real model and LanceDB."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp import StdioServerParameters

from tests.server.mcp_scenario import call, error_of
from tests.server_process import CLI, environment

# Server subprocesses cost seconds each: one backend.
pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio"])

QUESTION = "Caroline: What have you been researching lately?"
# Shares no word with the query below and is only loosely like it (cosine ~0.25): alone it
# scores on that meaning only, just over the threshold; in its thread, right after the
# question, it gets the question's match too.
ANSWER = "Melanie: Adoption agencies, mostly; we want to grow our family."
AFTER = "Caroline: I went hiking in the mountains last weekend."
QUERY = "What has Caroline been researching?"
UNRELATED = (
    "Run database migrations before starting the API server.",
    "The nightly build failed: flake8 E501 in cli.py line 80.",
    "Grandma's apple pie needs more cinnamon and less sugar.",
)
STEP = 50


def server(tmp_path: Path) -> StdioServerParameters:
    config = tmp_path / "ralph.yaml"
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        f"    lifecycle:\n      auto_run: false\n      max_iteration_step: {STEP}\n",
        encoding="utf-8",
    )
    return StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve"], env=environment(config), cwd=str(tmp_path)
    )


async def resource(client: mcp.Client, uri: str) -> dict[str, Any]:
    answer = await client.read_resource(uri)
    return dict(json.loads(answer.contents[0].text))  # type: ignore[union-attr]


async def test_an_answer_stored_after_its_question_in_one_thread_is_found_through_it(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(180):
        async with mcp.Client(server(tmp_path)) as client:
            ids: dict[str, dict[str, str]] = {}
            for tag, thread in (("threaded", {"thread": "conv-1", "iteration": 1}), ("alone", {})):
                await call(client, "store_context", content=UNRELATED[0], context_type="output")
                ids[tag] = {
                    text: (
                        await call(
                            client,
                            "store_context",
                            content=text,
                            context_type="iteration",
                            tags=[tag],
                            **thread,
                        )
                    )["id"]
                    for text in (QUESTION, ANSWER, AFTER)
                }
                await call(client, "store_context", content=UNRELATED[1], context_type="output")
            found = {
                tag: await call(client, "get_relevant_context", query=QUERY, tags=[tag])
                for tag in ids
            }
            shown = await resource(client, f"context://items/{ids['threaded'][ANSWER]}")
    hits = {tag: {h["item"]["id"]: h for h in answer["items"]} for tag, answer in found.items()}
    threaded = hits["threaded"][ids["threaded"][ANSWER]]
    assert found["threaded"]["items"][0]["item"]["id"] == ids["threaded"][QUESTION]
    assert threaded["breakdown"]["neighbour"] > 0.4  # the question's match, right before it
    assert (threaded["item"]["source"], threaded["item"]["created_iteration"]) == ("conv-1", 1)
    # The same turns with no thread: the answer stands alone, on its own meaning only.
    assert ids["alone"][QUESTION] in hits["alone"]
    alone = hits["alone"].get(ids["alone"][ANSWER])
    assert alone is None or alone["breakdown"]["neighbour"] == 0.0
    assert alone is None or alone["score"] < threaded["score"] - 0.1
    assert (shown["source"], shown["created_iteration"]) == ("conv-1", 1)


BAD: list[tuple[dict[str, Any], str]] = [
    ({"thread": ""}, "argument 'thread': String should have at least 1 character"),
    ({"thread": "   "}, "thread is blank"),
    ({"thread": "conv\n1"}, "thread has a control character"),
    ({"thread": "c" * 201}, "argument 'thread': String should have at most 200 characters"),
    ({"thread": 7}, "argument 'thread'"),
    ({"thread": ["conv-1"]}, "argument 'thread'"),
    ({"iteration": -1}, "argument 'iteration': Input should be greater than or equal to 0"),
    ({"iteration": "3"}, "argument 'iteration'"),
    ({"iteration": True}, "argument 'iteration'"),
    ({"iteration": 2**31}, "argument 'iteration'"),
    # The store's latest iteration is 2: at most 2 + STEP.
    ({"iteration": 3 + STEP}, f"must be at most {2 + STEP} (lifecycle.max_iteration_step"),
]


async def test_a_bad_thread_or_iteration_is_refused_naming_it_and_stores_nothing(
    tmp_path: Path,
) -> None:
    entry = {"content": "Adoption agencies, mostly.", "context_type": "output"}
    with anyio.fail_after(180):
        async with mcp.Client(server(tmp_path)) as client:
            await call(client, "store_iteration_result", iteration=2, summary="ok", success=True)
            before = await call(client, "get_context_stats")
            refused = []
            for arguments, says in BAD:
                single = await error_of(client, "store_context", **entry, **arguments)
                batch = await error_of(
                    client, "store_contexts", items=[entry, {**entry, **arguments}]
                )
                refused.append((arguments, says, single, batch))
            after = await call(client, "get_context_stats")
            # The bound is inclusive, and a refused call left the store writable.
            edge = await call(client, "store_context", **entry, thread="t", iteration=2 + STEP)
    for arguments, says, single, batch in refused:
        assert says in single, (arguments, single)
        assert (
            says.replace("'thread'", "'items.1.thread'").replace(
                "'iteration'", "'items.1.iteration'"
            )
            in batch
        ), (arguments, batch)
        assert "Traceback" not in single + batch
    assert after["items"] == before["items"] == 0
    assert (edge["source"], edge["created_iteration"]) == ("t", 2 + STEP)


async def test_store_contexts_keeps_the_order_so_consecutive_entries_of_a_thread_are_neighbours(
    tmp_path: Path,
) -> None:
    entries: list[dict[str, Any]] = [
        {"content": UNRELATED[0], "context_type": "output", "thread": "ops", "iteration": 0},
        {"content": QUESTION, "context_type": "iteration", "thread": "conv-1", "iteration": 0},
        {"content": ANSWER, "context_type": "iteration", "thread": "conv-1", "iteration": 0},
        {"content": UNRELATED[2], "context_type": "output"},
    ]
    with anyio.fail_after(180):
        async with mcp.Client(server(tmp_path)) as client:
            schema = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            stored = await call(client, "store_contexts", items=entries)
            shown = [
                await resource(client, f"context://items/{item['id']}") for item in stored["items"]
            ]
            found = await call(client, "get_relevant_context", query=QUERY)
    entry_schema = schema["store_contexts"]["$defs"]["ContextEntry"]
    for published in (schema["store_context"], entry_schema):
        assert published["additionalProperties"] is False
        thread = published["properties"]["thread"]
        assert thread["anyOf"][0] == {"type": "string", "minLength": 1, "maxLength": 200}
        assert "neighbours" in thread["description"]
        assert "max_iteration_step" in published["properties"]["iteration"]["description"]
    # In the order given, one place after another, each in its thread.
    assert [s["content"] for s in shown] == [e["content"] for e in entries]
    places = [s["sequence"] for s in shown]
    assert places == list(range(places[0], places[0] + len(entries)))
    assert [s["source"] for s in shown] == ["ops", "conv-1", "conv-1", ""]
    assert [i["source"] for i in stored["items"]] == ["ops", "conv-1", "conv-1", ""]
    hits = {h["item"]["id"]: h for h in found["items"]}
    answer = hits[stored["items"][2]["id"]]
    assert answer["breakdown"]["neighbour"] > 0.4
