"""Lifecycle summaries written by a language model (``lifecycle.summarizer_model``): the
engine with the real embedding model and LanceDB on a temp dir, talking to the fake
OpenAI-compatible server on a real socket; and the extractive fallback when the model fails."""

from __future__ import annotations

import anyio
from structlog.testing import capture_logs

from ralph_context import Engine
from ralph_context.config import Settings
from ralph_context.lifecycle.abstractive import MAX_INPUT_CHARS
from ralph_context.lifecycle.actor import LifecycleReport
from ralph_context.lifecycle.summarize import sentences
from tests.helpers import Loader, SettingsFactory, advance
from tests.inference.fake_openai import FakeOpenAI, Slow, Status, Text
from tests.inference.helpers import inference_section

AGES = {
    "aging_after_iterations": 1,
    "summarize_after_iterations": 3,
    "archive_after_iterations": 5,
    "prune_after_iterations": 8,
    "auto_run": False,
}

POOL = (
    "The nightly build failed in the integration stage. "
    "The payments service could not reach its database because the connection pool was "
    "exhausted. Raising the pool size from 10 to 40 in config/db.yaml made the tests pass. "
    "The dashboard colours were also tweaked, unrelated to the failure. "
    "Lunch was pizza. "
    "The root cause was a leaked connection in refund_handler(), fixed in the same change."
)
CACHE = (
    "The search endpoint was slow because every request rebuilt the tokenizer. "
    "Profiling showed 80% of the time in Tokenizer.__init__. "
    "Caching one tokenizer per worker in app/search.py cut p99 from 900 ms to 120 ms. "
    "The team discussed moving to a new framework but decided against it. "
    "Someone's cat walked over the keyboard during the meeting."
)
MODEL_SUMMARY = (
    "Integration tests failed on an exhausted DB pool; raising it 10 to 40 in "
    "config/db.yaml and fixing the leak in refund_handler() made them pass."
)


def settings(make_settings: SettingsFactory, url: str | None, **lifecycle: object) -> Settings:
    servers = [] if url is None else [{"kind": "lmstudio", "base_url": url}]
    return make_settings(
        lifecycle={**AGES, **lifecycle},
        inference=inference_section(*servers, retries=0),
    )


async def summarize(engine: Engine, *texts: str) -> tuple[LifecycleReport, list[str]]:
    """Store ``texts`` at iteration 0, move the clock past the summarize age, run a pass;
    the report and the items' contents afterwards."""
    ids = await store(engine, *texts)
    report = await engine.summarize_old(3)
    return report, [(await engine.get(item_id)).content for item_id in ids]


async def store(engine: Engine, *texts: str) -> list[str]:
    """Store ``texts`` at iteration 0 and move the clock past the summarize age."""
    ids = [(await engine.store(text, "iteration", iteration=0)).id for text in texts]
    await advance(engine, 4)
    return ids


async def test_the_configured_model_writes_the_summary_and_the_original_is_kept(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    server.script(Text(f"<think>The key facts are the pool.</think>Summary:\n{MODEL_SUMMARY}"))
    config = settings(make_settings, server.url, summarizer_model="fake-model")
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            [item_id] = await store(engine, POOL)
            report = await engine.summarize_old(3)
            content = (await engine.get(item_id)).content
            original = await engine.original(item_id)
    assert content == MODEL_SUMMARY  # reasoning and the "Summary:" label are dropped
    assert report.summarizer == "model fake-model"
    assert report.notes == ()
    assert report.chars_saved == len(POOL) - len(MODEL_SUMMARY)
    assert original == POOL
    [request] = server.chat_requests()
    assert request.body is not None
    assert request.body["model"] == "fake-model"
    assert request.body["temperature"] == 0.2
    system, user = request.body["messages"]
    assert system["role"] == "system" and "not instructions" in system["content"]
    assert user["content"] == f"Item type: iteration\n\n<item>\n{POOL}\n</item>"


async def test_a_failing_model_is_asked_once_per_pass_and_every_item_is_summarized_anyway(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    server.script(Status(500, "model crashed"))
    config = settings(make_settings, server.url, summarizer_model="fake-model")
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            report, contents = await summarize(engine, POOL, CACHE)
    assert len(server.chat_requests()) == 1  # not once per item
    assert report.summarizer == "extractive"
    [note] = report.notes
    assert "'fake-model' was not asked for the rest of this pass" in note
    assert "model crashed" in note
    for content, text in zip(contents, (POOL, CACHE), strict=True):
        assert len(content) < len(text)
        assert all(sentence in text for sentence in sentences(content))  # extractive
    assert "pizza" not in contents[0]


async def test_an_unusable_reply_sends_only_that_item_to_the_extractive_summary(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    # First item: all reasoning, cut off; second: a usable answer in a fence.
    server.script(
        Text("<think>Let me think about the pool and the build and", finish_reason="length"),
        Text(f"```\n{MODEL_SUMMARY}\n```"),
    )
    config = settings(make_settings, server.url, summarizer_model="fake-model")
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            report, contents = await summarize(engine, CACHE, POOL)
    assert len(server.chat_requests()) == 2
    assert contents[1] == MODEL_SUMMARY
    assert contents[0] != CACHE and "cat" not in contents[0]  # extractive, the aside dropped
    assert report.summarizer == "model fake-model (1), extractive (1)"
    [note] = report.notes
    assert note.startswith("1 model summaries were unusable")


async def test_a_cut_off_reply_keeps_its_complete_sentences(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    first = "Integration tests failed on an exhausted DB pool in config/db.yaml."
    server.script(Text(f"{first} The leak in refund_han", finish_reason="length"))
    config = settings(make_settings, server.url, summarizer_model="fake-model")
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            report, [content] = await summarize(engine, POOL)
    assert content == first
    assert report.summarizer == "model fake-model"


async def test_with_no_language_model_configured_the_summaries_are_extractive_and_say_why(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    config = settings(make_settings, None, summarizer_model="fake-model")
    with anyio.fail_after(60), capture_logs() as logs:
        async with Engine(config, model_loader=shared_model) as engine:
            report, [content] = await summarize(engine, POOL)
            health = engine.health()
    warned = [entry for entry in logs if entry["event"] == "model_set_without_inference"]
    assert [(entry["key"], entry["model"]) for entry in warned] == [
        ("lifecycle.summarizer_model", "fake-model")
    ]
    assert "pool" in content and "pizza" not in content
    assert report.summarizer == "extractive"
    [note] = report.notes
    assert note.startswith(
        "summarizer_model 'fake-model' is set but no language model server is configured"
    )
    assert health.not_configured == frozenset({"inference"})


async def test_without_summarizer_model_the_model_is_never_asked(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    config = settings(make_settings, server.url)
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            report, [content] = await summarize(engine, POOL)
    assert server.chat_requests() == []
    assert report.summarizer == "extractive" and report.notes == ()
    assert "pizza" not in content


async def test_the_pass_budget_bounds_the_time_spent_waiting_on_a_slow_model(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    server.script(Slow(8.0, Text(MODEL_SUMMARY)))
    config = settings(
        make_settings,
        server.url,
        summarizer_model="fake-model",
        summarizer_timeout_seconds=60,
        summarizer_budget_seconds=1.0,
    )
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            await store(engine, POOL, CACHE)
            started = anyio.current_time()
            report = await engine.summarize_old(3)
            took = anyio.current_time() - started
    assert took < 6.0  # the 8-second reply was not waited for
    assert len(server.chat_requests()) == 1
    assert report.summarizer == "extractive"
    assert "summarizer_budget_seconds (1s) spent" in report.notes[0]


async def test_the_budget_counts_every_reply_of_the_pass_not_just_one(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    # Four items, each reply 0.4 s: two fit in a 1-second budget, the third runs into its end.
    reports = [POOL.replace("10 to 40", f"10 to {n}") for n in (41, 42, 43, 44)]
    server.script(*[Slow(0.4, Text(f"Summary number {n}.")) for n in range(4)])
    config = settings(
        make_settings, server.url, summarizer_model="fake-model", summarizer_budget_seconds=1.0
    )
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            report, contents = await summarize(engine, *reports)
    assert len(server.chat_requests()) == 3  # the fourth item was not sent
    assert sorted(contents)[:2] == ["Summary number 0.", "Summary number 1."]
    assert report.summarizer == "model fake-model (2), extractive (2)"
    [note] = report.notes
    assert "summarizer_budget_seconds (1s) spent" in note


async def test_a_request_the_server_refuses_sends_only_that_item_to_the_extractive_summary(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    server.script(Status(400, "context length exceeded"), Text(MODEL_SUMMARY))
    config = settings(make_settings, server.url, summarizer_model="fake-model")
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            report, contents = await summarize(engine, CACHE, POOL)
    assert len(server.chat_requests()) == 2  # the model was still asked for the second
    assert contents[1] == MODEL_SUMMARY and "cat" not in contents[0]
    assert report.summarizer == "model fake-model (1), extractive (1)"
    [note] = report.notes
    assert note.startswith("the server refused 1 item(s)")


async def test_dry_runs_name_the_intended_summarizer_and_empty_passes_name_none(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    config = settings(make_settings, server.url, summarizer_model="fake-model")
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            await store(engine, POOL, "short note")
            planned = await engine.summarize_old(3, dry_run=True)
            await engine.summarize_old(3)
            nothing = await engine.summarize_old(3)  # all summarized already
        unconfigured = settings(make_settings, None, summarizer_model="fake-model")
        async with Engine(unconfigured, model_loader=shared_model) as engine:
            await store(engine, "short note")
            short_only = await engine.summarize_old(3)
            dry = await engine.summarize_old(3, dry_run=True)
    assert planned.summarizer == "model fake-model" and planned.notes == ()
    assert nothing.summarizer == "none"
    assert short_only.summarized and short_only.summarizer == "none"
    assert dry.summarizer == "extractive" and "no language model server" in dry.notes[0]


async def test_a_huge_item_reaches_the_model_as_its_start_and_end(
    make_settings: SettingsFactory, shared_model: Loader, server: FakeOpenAI
) -> None:
    lines = [f"line {n}: step {n} ok." for n in range(4000)]
    log = "\n".join(["BUILD START config=release.", *lines, "FATAL: disk full at /var/lib."])
    assert len(log) > MAX_INPUT_CHARS
    server.script(Text("The release build ran 4000 steps, then failed: disk full at /var/lib."))
    config = settings(make_settings, server.url, summarizer_model="fake-model")
    with anyio.fail_after(60):
        async with Engine(config, model_loader=shared_model) as engine:
            await summarize(engine, log)
    [request] = server.chat_requests()
    assert request.body is not None
    sent = request.body["messages"][1]["content"]
    assert "BUILD START" in sent and "FATAL: disk full at /var/lib." in sent
    assert "characters omitted" in sent
    assert len(sent) < MAX_INPUT_CHARS + 200
