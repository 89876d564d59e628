"""suggest_improvements with ``packs.prompt_learning.rewrite_model``: the prompt rewritten by
a model (the fake OpenAI-compatible server on a real socket) to apply the measured
suggestions, checked by the pattern detectors; a failing model leaves the suggestions
standing. Through the real MCP client, with the real embedding model and LanceDB."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import mcp
import pytest

from ralph_context.packs.prompts.patterns import length_band
from ralph_context.packs.prompts.rewrite import check_rewrite
from ralph_context.packs.prompts.suggest import Suggestion
from tests.helpers import Loader, SettingsFactory
from tests.inference.fake_openai import FakeOpenAI, Status, Text
from tests.inference.helpers import inference_section
from tests.packs.conftest import serving
from tests.packs.test_prompt_learning import SIMILAR, new_prompt
from tests.server.mcp_scenario import call

PROMPT = "Summarize this article about climate policy."
STRUCTURED = (
    "Summarize this article about climate policy as:\n1. Main claim\n2. Evidence\n3. Open questions"
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(["rewriter"], name="rewriter") as running:
        yield running


async def serve(
    make_settings: SettingsFactory,
    shared_model: Loader,
    url: str | None,
    rewrite_model: str | None,
) -> AsyncIterator[mcp.Client]:
    servers = [] if url is None else [{"kind": "lmstudio", "base_url": url}]
    settings = make_settings(
        lifecycle={"auto_run": False},
        packs={"enabled": ["prompts"], "prompt_learning": {"rewrite_model": rewrite_model}},
        inference=inference_section(*servers, retries=0),
    )
    async with serving(settings, shared_model) as running:
        yield running.client


@pytest.fixture
async def client(
    make_settings: SettingsFactory, shared_model: Loader, fake: FakeOpenAI
) -> AsyncIterator[mcp.Client]:
    async for client in serve(make_settings, shared_model, fake.url, "rewriter"):
        yield client


async def seeded_suggestion(client: mcp.Client) -> dict[str, Any]:
    for text, success in SIMILAR.items():
        await new_prompt(client, text, success)
    return await call(client, "suggest_improvements", prompt=PROMPT)


async def test_the_rewrite_applies_the_measured_suggestion_and_is_checked(
    client: mcp.Client, fake: FakeOpenAI
) -> None:
    fake.script(Text(f"<think>add a list</think>Here is the rewritten prompt:\n{STRUCTURED}"))
    with anyio.fail_after(60):
        answer = await seeded_suggestion(client)
    assert [s["type"] for s in answer["suggestions"]] == ["add_structure"]
    rewrite = answer["rewrite"]
    assert rewrite["model"] == "rewriter"
    assert rewrite["prompt"] == STRUCTURED
    assert rewrite["applied"] == ["add_structure"]
    assert rewrite["not_applied"] == []
    assert rewrite["note"] is None
    assert rewrite["latency_ms"] >= 0
    [request] = fake.chat_requests()
    assert request.body is not None
    assert request.body["model"] == "rewriter"
    system, user = request.body["messages"]
    assert "placeholders" in system["content"]
    assert user["content"].startswith(f"<prompt>\n{PROMPT}\n</prompt>\n\nCHANGES:\n1. ")
    assert answer["suggestions"][0]["example"] in user["content"]


async def test_a_rewrite_that_ignores_the_suggestion_is_reported_as_not_applying_it(
    client: mcp.Client, fake: FakeOpenAI
) -> None:
    reworded = "Please write a careful summary of this article about climate policy."
    fake.script(Text(reworded))
    with anyio.fail_after(60):
        answer = await seeded_suggestion(client)
    assert answer["rewrite"]["prompt"] == reworded
    assert answer["rewrite"]["applied"] == []
    assert answer["rewrite"]["not_applied"] == ["add_structure"]


async def test_a_failing_rewrite_model_leaves_the_suggestions_standing(
    client: mcp.Client, fake: FakeOpenAI
) -> None:
    fake.script(Status(503, "model is loading"))
    with anyio.fail_after(60):
        answer = await seeded_suggestion(client)
    assert [s["type"] for s in answer["suggestions"]] == ["add_structure"]
    rewrite = answer["rewrite"]
    assert rewrite["prompt"] is None and rewrite["applied"] == []
    assert rewrite["note"].startswith("the rewrite model failed:")
    assert "model is loading" in rewrite["note"]


async def test_an_empty_or_unchanged_reply_is_no_rewrite(
    client: mcp.Client, fake: FakeOpenAI
) -> None:
    fake.script(Text("<think>nothing to change</think>"), Text(PROMPT))
    with anyio.fail_after(60):
        first = await seeded_suggestion(client)
        second = await call(client, "suggest_improvements", prompt=PROMPT)
    for answer in (first, second):
        assert answer["rewrite"]["prompt"] is None
        assert answer["rewrite"]["note"].startswith("the rewrite model returned no new prompt")


async def test_with_nothing_to_apply_the_model_is_not_asked(
    client: mcp.Client, fake: FakeOpenAI
) -> None:
    with anyio.fail_after(60):
        answer = await call(client, "suggest_improvements", prompt=PROMPT)
    assert answer["suggestions"] == []
    assert answer["rewrite"]["prompt"] is None
    assert answer["rewrite"]["note"] == "no measured suggestion to apply, so no rewrite"
    assert fake.chat_requests() == []


async def test_without_a_rewrite_model_there_is_no_rewrite(
    make_settings: SettingsFactory, shared_model: Loader, fake: FakeOpenAI
) -> None:
    with anyio.fail_after(60):
        async for client in serve(make_settings, shared_model, fake.url, None):
            answer = await seeded_suggestion(client)
    assert answer["suggestions"] and answer["rewrite"] is None
    assert fake.chat_requests() == []


async def test_a_rewrite_model_without_any_server_says_how_to_configure_one(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(60):
        async for client in serve(make_settings, shared_model, None, "rewriter"):
            answer = await seeded_suggestion(client)
    assert answer["suggestions"]
    assert "no language model configured" in answer["rewrite"]["note"]


def _length(kind: str) -> Suggestion:
    return Suggestion(kind, "length", "specificity", "longer", "Aim for 60 words.", 0.3, 2, 2)


def test_a_length_suggestion_counts_only_when_the_rewrite_changes_length_band() -> None:
    short = "Summarize the article."
    few_more = "Summarize the article in plain words."  # still short
    medium = "Summarize the article " + "with care and detail " * 8 + "for a reader."
    assert length_band(few_more) == "short" and length_band(medium) == "medium"
    still_short = check_rewrite(few_more, short, [_length("add_detail")])
    longer = check_rewrite(medium, short, [_length("add_detail")])
    shorter = check_rewrite(short + " Be brief.", medium, [_length("shorten")])
    assert still_short is not None and still_short.not_applied == ("add_detail",)
    assert longer is not None and longer.applied == ("add_detail",)
    assert shorter is not None and shorter.applied == ("shorten",)
