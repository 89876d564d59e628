"""The prompt-learning pack through the real MCP client: EMA arithmetic, filters, sessions,
measured suggestions, analytics on a seeded history, and refusals that change nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import mcp
import pytest

from ralph_context.packs.prompts.metrics import Observation
from ralph_context.packs.prompts.store import Feedback, PromptTables
from ralph_context.packs.toolkit import EngineHolder
from ralph_context.server.app import build_server
from tests.helpers import SettingsFactory
from tests.packs.conftest import Served, no_model, serving
from tests.server.mcp_scenario import call, error_of

PACK_TOOLS = {
    "retrieve_prompts",
    "record_feedback",
    "suggest_improvements",
    "get_analytics",
    "get_prompt_session",
}


async def new_prompt(client: mcp.Client, text: str, success: bool, **extra: Any) -> str:
    answer = await call(
        client,
        "record_feedback",
        prompt_id="new",
        prompt_text=text,
        outcome={"success": success},
        **extra,
    )
    return str(answer["prompt_id"])


async def test_the_tools_are_listed_with_output_schemas(client: mcp.Client) -> None:
    with anyio.fail_after(30):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= PACK_TOOLS
    for name in PACK_TOOLS:
        assert tools[name].output_schema is not None, name
    schema = tools["retrieve_prompts"].input_schema
    assert schema["required"] == ["query"]
    assert schema["properties"]["top_k"]["default"] == 5
    assert schema["properties"]["min_performance"]["default"] == 0.7


async def test_feedback_updates_metrics_by_moving_average(client: mcp.Client) -> None:
    with anyio.fail_after(60):
        first = await call(
            client,
            "record_feedback",
            prompt_id="new",
            prompt_text="Review this pull request for security issues.",
            domain="code_review",
            outcome={
                "success": True,
                "latency_ms": 400,
                "output_tokens": 120,
                "quality_score": 0.8,
            },
        )
        assert first["status"] == "recorded" and first["created"] is True
        assert first["updated_metrics"] == {
            "success_rate": 1.0,
            "avg_latency_ms": 400.0,
            "token_efficiency": 0.8,
            "observation_count": 1,
        }
        prompt_id = first["prompt_id"]
        second = await call(
            client,
            "record_feedback",
            prompt_id=prompt_id,
            outcome={"success": False, "latency_ms": 600, "quality_score": 0.5},
            user_feedback={"satisfaction": 0.2, "comments": "missed the SQL injection"},
        )
        # 0.3 * new + 0.7 * old, per metric.
        assert second["updated_metrics"] == {
            "success_rate": pytest.approx(0.7),
            "avg_latency_ms": pytest.approx(460.0),
            "token_efficiency": pytest.approx(0.71),
            "observation_count": 2,
        }
        third = await call(
            client, "record_feedback", prompt_id=prompt_id, outcome={"success": True}
        )
        # No latency or quality reported: those averages stay; success 0.3 + 0.7 * 0.7.
        assert third["updated_metrics"] == {
            "success_rate": pytest.approx(0.79),
            "avg_latency_ms": pytest.approx(460.0),
            "token_efficiency": pytest.approx(0.71),
            "observation_count": 3,
        }
        again = await call(
            client,
            "record_feedback",
            prompt_id="new",
            prompt_text="Review this pull request for security issues.",
            domain="code_review",
            outcome={"success": False},
        )
        # The same text in the same domain is the same prompt, not a twin.
        assert (again["prompt_id"], again["created"]) == (prompt_id, False)
        assert again["updated_metrics"]["success_rate"] == pytest.approx(0.7 * 0.79)
        assert again["updated_metrics"]["observation_count"] == 4


async def test_bad_feedback_is_refused_and_changes_nothing(client: mcp.Client) -> None:
    with anyio.fail_after(60):
        prompt_id = await new_prompt(client, "Write a haiku about rain.", True, domain="poetry")
        before = await call(client, "get_analytics", time_range="all")

        message = await error_of(
            client, "record_feedback", prompt_id="new", outcome={"success": True}
        )
        assert "prompt_text is required when prompt_id is 'new'" in message
        message = await error_of(
            client, "record_feedback", prompt_id="4b1d-missing", outcome={"success": True}
        )
        assert "prompt '4b1d-missing' not found" in message
        message = await error_of(
            client,
            "record_feedback",
            prompt_id=prompt_id,
            outcome={"success": True, "quality_score": 1.5},
        )
        assert "quality_score" in message and "less than or equal to 1" in message
        message = await error_of(
            client, "record_feedback", prompt_id=prompt_id, outcome={"success": "yes"}
        )
        assert "outcome.success" in message and "boolean" in message
        message = await error_of(
            client,
            "record_feedback",
            prompt_id=prompt_id,
            outcome={"success": True},
            user_feedback={"satisfaction": -0.1},
        )
        assert "satisfaction" in message
        message = await error_of(
            client,
            "record_feedback",
            prompt_id=prompt_id,
            outcome={"success": True},
            domain="prose",
        )
        assert "is in domain 'poetry', not 'prose'" in message
        message = await error_of(client, "retrieve_prompts", query="rain", top_k=0)
        assert "top_k" in message
        message = await error_of(client, "retrieve_prompts", query="rain", min_performance=2)
        assert "min_performance" in message
        message = await error_of(client, "get_analytics", time_range="1y")
        assert "time_range" in message and "'7d'" in message
        message = await error_of(client, "get_analytics", metrics=["vibes"])
        assert "metrics" in message

        after = await call(client, "get_analytics", time_range="all")
        assert after == before
        found = await call(client, "retrieve_prompts", query="haiku about rain", min_performance=0)
        assert [r["metrics"]["observation_count"] for r in found["results"]] == [1]


async def test_domain_and_performance_filters_apply_before_the_cut(client: mcp.Client) -> None:
    with anyio.fail_after(90):
        weak = await new_prompt(
            client, "Summarize this meeting transcript into action items.", False, domain="meetings"
        )
        strong = await new_prompt(
            client,
            "List the decisions and owners from these meeting notes.",
            True,
            domain="meetings",
        )
        other = await new_prompt(
            client,
            "Summarize this meeting transcript into action items, please.",
            True,
            domain="email",
        )
        query = "Summarize the meeting transcript into action items"

        unfiltered = await call(client, "retrieve_prompts", query=query, min_performance=0, top_k=3)
        assert [r["prompt_id"] for r in unfiltered["results"]][:2] in ([weak, other], [other, weak])
        assert unfiltered["tier"] == "semantic" and unfiltered["degraded_reason"] is None

        # The nearest prompt in the domain failed: both filters hold, so top_k=1 is still a hit.
        both = await call(client, "retrieve_prompts", query=query, domain="meetings", top_k=1)
        assert [r["prompt_id"] for r in both["results"]] == [strong]
        result = both["results"][0]
        assert result["domain"] == "meetings" and result["metrics"]["success_rate"] == 1.0
        assert 0 < result["similarity_score"] < 1
        datetime.fromisoformat(result["created_at"])

        low_bar = await call(
            client, "retrieve_prompts", query=query, domain="meetings", min_performance=0
        )
        assert [r["prompt_id"] for r in low_bar["results"]] == [weak, strong]
        quoted = await call(client, "retrieve_prompts", query=query, domain="x' OR '1'='1")
        assert quoted["results"] == []


async def test_sessions_keep_count_best_score_and_history(client: mcp.Client) -> None:
    with anyio.fail_after(60):
        first = await call(
            client,
            "record_feedback",
            prompt_id="new",
            prompt_text="Explain recursion to a child.",
            outcome={"success": True, "quality_score": 0.6},
            session_id="opt-1",
        )
        assert first["session"]["iteration_count"] == 1
        second = await call(
            client,
            "record_feedback",
            prompt_id="new",
            prompt_text="You are a patient teacher. Explain recursion to a child, step by step.",
            outcome={"success": True, "quality_score": 0.9},
            session_id="opt-1",
        )
        await call(
            client,
            "record_feedback",
            prompt_id=first["prompt_id"],
            outcome={"success": False},
            session_id="opt-1",
        )
        state = await call(client, "get_prompt_session", session_id="opt-1")
        assert state["iteration_count"] == 3
        assert state["best_score"] == pytest.approx(0.9)
        assert state["current_prompt_id"] == first["prompt_id"]
        assert [(h["prompt_id"], h["score"]) for h in state["history"]] == [
            (first["prompt_id"], 0.6),
            (second["prompt_id"], 0.9),
            (first["prompt_id"], 0.0),
        ]
        message = await error_of(client, "get_prompt_session", session_id="opt-2")
        assert "session 'opt-2' not found" in message


SIMILAR = {
    "Summarize the article.\n1. Main claim\n2. Evidence\n3. Open questions": True,
    "Summarize the news article in points:\n- who\n- what\n- when": True,
    "Summarize this article about energy prices.": False,
    "Give a summary of the article on tax reform.": False,
}


async def test_suggestions_are_measured_from_similar_prompts(client: mcp.Client) -> None:
    prompt = "Summarize this article about climate policy."
    with anyio.fail_after(120):
        cold = await call(client, "suggest_improvements", prompt=prompt)
        assert cold["suggestions"] == []
        assert cold["based_on"]["similar_prompts_analyzed"] == 0
        assert "no similar prompts" in cold["note"]

        ids = {text: await new_prompt(client, text, success) for text, success in SIMILAR.items()}
        warm = await call(
            client, "suggest_improvements", prompt=prompt, current_performance={"success_rate": 0.2}
        )
        assert warm["based_on"] == {
            "similar_prompts_analyzed": 4,
            "avg_performance_of_similar": 0.5,
            "current_success_rate": 0.2,
            "gap_to_similar": pytest.approx(0.3),
        }
        assert [s["type"] for s in warm["suggestions"]] == ["add_structure"]
        structure = warm["suggestions"][0]
        # Prompts with a list succeed 1.0, those without 0.0.
        assert structure["expected_improvement"] == pytest.approx(1.0)
        assert (structure["similar_with_pattern"], structure["similar_without_pattern"]) == (2, 2)
        assert structure["example"] in (
            "1. Main claim\n2. Evidence\n3. Open questions",
            "- who\n- what\n- when",
        )

        # The similar prompts' record changes, so does the advice.
        numbered = ids["Summarize the article.\n1. Main claim\n2. Evidence\n3. Open questions"]
        for _ in range(2):
            await call(client, "record_feedback", prompt_id=numbered, outcome={"success": False})
        for text in (
            "Summarize this article about energy prices.",
            "Give a summary of the article on tax reform.",
        ):
            await call(client, "record_feedback", prompt_id=ids[text], outcome={"success": True})
        changed = await call(client, "suggest_improvements", prompt=prompt)
        structure = changed["suggestions"][0]
        # with: (0.49 + 1.0) / 2 = 0.745; without: (0.3 + 0.3) / 2 = 0.3.
        assert structure["expected_improvement"] == pytest.approx(0.445)
        assert structure["example"] == "- who\n- what\n- when"

        focused = await call(
            client, "suggest_improvements", prompt=prompt, improvement_focus="efficiency"
        )
        assert focused["suggestions"] == []
        assert "share no structural pattern" in focused["note"]
        structured = await call(
            client, "suggest_improvements", prompt=prompt + "\n1. Claim\n2. Evidence"
        )
        assert "add_structure" not in [s["type"] for s in structured["suggestions"]]


def _days_ago(days: float) -> datetime:
    return datetime.now(UTC) - timedelta(days=days)


async def _seed(served: Served, feedback: Feedback) -> str:
    recorded = await served.engine.in_packs(
        lambda space: PromptTables.of(space).record(feedback, None, 0.3)
    )
    return recorded.record.id


async def test_analytics_on_a_seeded_history(served: Served) -> None:
    review = "You are a reviewer. List the issues:\n1. bugs\n2. style"
    with anyio.fail_after(60):
        p1 = await _seed(
            served,
            Feedback(
                Observation(False), prompt_text=review, domain="code_review", at=_days_ago(60)
            ),
        )
        await _seed(
            served, Feedback(Observation(True, latency_ms=300), prompt_id=p1, at=_days_ago(10))
        )
        await _seed(served, Feedback(Observation(True), prompt_id=p1, at=_days_ago(2)))
        p2 = await _seed(
            served,
            Feedback(
                Observation(True, latency_ms=100),
                prompt_text="Summarize the text.",
                domain="summarization",
                at=_days_ago(3),
            ),
        )
        await _seed(
            served, Feedback(Observation(False), prompt_id=p2, satisfaction=0.4, at=_days_ago(1))
        )
        await _seed(
            served,
            Feedback(Observation(True), prompt_text="Translate to French.", at=_days_ago(100)),
        )

        week = await call(
            served.client,
            "get_analytics",
            time_range="7d",
            metrics=["success_rate", "avg_latency_ms", "satisfaction"],
        )
        assert week["summary"]["total_prompts"] == 2
        assert week["summary"]["outcomes"] == 3
        # p1: 0 -> 0.3 -> 0.51; p2: 1.0 -> 0.7.
        assert week["summary"]["avg_success_rate"] == pytest.approx(0.605)
        # Successes at days 0 and 1 (from the first outcome in range), a failure at day 2.
        assert week["summary"]["improvement_trend"] == pytest.approx(-0.5, abs=1e-3)
        assert week["summary"]["averages"] == {
            "success_rate": pytest.approx(0.605),
            "avg_latency_ms": pytest.approx((300 + 100) / 2),
            "satisfaction": pytest.approx(0.4),
        }
        assert week["by_domain"]["code_review"]["count"] == 1
        assert week["by_domain"]["code_review"]["avg_success"] == pytest.approx(0.51)
        assert week["by_domain"]["summarization"]["avg_success"] == pytest.approx(0.7)
        assert [(p["pattern"], p["prompts"]) for p in week["top_patterns"]] == [
            ("role_statement", 1),
            ("structured_output", 1),
        ]
        assert week["top_patterns"][0]["success_rate"] == pytest.approx(0.51)

        month = await call(served.client, "get_analytics", time_range="30d")
        assert (month["summary"]["total_prompts"], month["summary"]["outcomes"]) == (2, 4)
        everything = await call(served.client, "get_analytics", time_range="all")
        assert everything["summary"]["total_prompts"] == 3
        assert everything["summary"]["avg_success_rate"] == pytest.approx((0.51 + 0.7 + 1.0) / 3)
        assert everything["by_domain"]["unclassified"]["count"] == 1
        assert set(everything["summary"]["averages"]) == {"success_rate", "token_efficiency"}
        reviews = await call(served.client, "get_analytics", domain="code_review", time_range="all")
        assert reviews["summary"]["total_prompts"] == 1
        assert set(reviews["by_domain"]) == {"code_review"}


async def test_without_the_model_retrieval_falls_back_to_full_text(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings(lifecycle={"auto_run": False}, packs=["prompts"])
    with anyio.fail_after(60):
        async with serving(settings, no_model) as running:
            client = running.client
            stored = await new_prompt(client, "Translate the README into German.", True)
            await new_prompt(client, "Draft a cover letter.", True)
            found = await call(client, "retrieve_prompts", query="German translation of the README")
    assert found["tier"] == "text"
    assert "embedding model unavailable" in found["degraded_reason"]
    assert [r["prompt_id"] for r in found["results"]] == [stored]


async def test_a_pack_not_named_registers_no_tools_and_its_own_switch_still_serves_it(
    make_settings: SettingsFactory,
) -> None:
    """Off by default; ``prompt_learning.enabled: true``, written when every pack was on,
    still serves it."""
    listed = {}
    for label, packs in (("default", {}), ("switched on", {"prompt_learning": {"enabled": True}})):
        server = build_server(EngineHolder(make_settings(packs=packs)))
        with anyio.fail_after(30):
            async with mcp.Client(server) as client:
                listed[label] = {tool.name for tool in (await client.list_tools()).tools}
    assert not listed["default"] & PACK_TOOLS
    assert "get_relevant_context" in listed["default"]
    assert listed["switched on"] == listed["default"] | PACK_TOOLS
