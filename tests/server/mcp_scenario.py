"""One walk through every tool, resource and prompt, run against each transport (its server
names every pack: ``ALL_PACKS``), and the tool sets of each pack."""

from __future__ import annotations

import json
from typing import Any

import mcp
import pytest
from mcp.types import TextContent

TYPES = ("task", "iteration", "skill", "file", "output", "error")
# The default face: what a server lists with no pack named.
CORE_TOOLS = {
    "get_relevant_context",
    "get_iteration_history",
    "store_context",
    "store_contexts",
    "mark_useful",
    "store_iteration_result",
    "forget_context",
    "get_context_stats",
    "health_check",
}
CURATION_TOOLS = {"get_skills", "summarize_old_context", "prune_low_value_context"}
PROMPT_LEARNING_TOOLS = {
    "retrieve_prompts",
    "record_feedback",
    "suggest_improvements",
    "get_analytics",
    "get_prompt_session",
}
PROJECT_TOOLS = {
    "query_learnings",
    "get_learning",
    "list_tags",
    "get_project_context",
    "capture_learning",
    "capture_decision",
    "get_cycle_intent",
    "update_project_state",
}
EVALUATION_TOOLS = {
    "calculate_drift",
    "analyze_variants",
    "analyze_trajectory",
    "compare_trajectories",
}
# The evaluation pack's, with a language model server only.
INFERENCE_TOOLS = {"list_models", "complete", "react_step", "judge", "generate_variants"}
ALL_PACKS = ("prompts", "project", "evaluation", "curation")
# Every pack's tools, with a model server.
ALL_PACK_TOOLS = (
    CURATION_TOOLS | PROMPT_LEARNING_TOOLS | PROJECT_TOOLS | EVALUATION_TOOLS | INFERENCE_TOOLS
)
# ``packs:`` in a ralph.yaml naming them all.
ALL_PACKS_YAML = f"    packs: [{', '.join(ALL_PACKS)}]\n"


def text_of(result: Any) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return str(first.text)


async def call(client: mcp.Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    if tool == "get_relevant_context":  # its text is the rendered items, not their JSON
        items = result.structured_content["items"]
        text = text_of(result)
        assert all(hit["item"]["id"] in text for hit in items), text
        assert len(text.splitlines()) == (len(items) + 1 if items else 1), text
    else:
        assert json.loads(text_of(result)) == result.structured_content
    return dict(result.structured_content)


async def error_of(client: mcp.Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} accepted {arguments}"
    return text_of(result)


async def exercise(client: mcp.Client) -> None:
    """Every tool, resource and prompt, with their error paths (every pack named, no
    language model server)."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    packs = CURATION_TOOLS | PROMPT_LEARNING_TOOLS | PROJECT_TOOLS | EVALUATION_TOOLS
    assert set(tools) == CORE_TOOLS | packs
    for tool in tools.values():
        assert tool.output_schema is not None, tool.name
        assert tool.annotations is not None, tool.name
    assert tools["get_relevant_context"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["prune_low_value_context"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["store_context"].annotations.read_only_hint is False  # type: ignore[union-attr]
    schema = tools["get_relevant_context"].input_schema
    assert schema["required"] == ["query"]
    assert schema["properties"]["max_items"]["default"] == 10

    # --- store and retrieve -------------------------------------------------------------
    skill = await call(
        client,
        "store_context",
        content="Run database migrations before starting the API server.",
        context_type="skill",
        tags=["db"],
        metadata={"source": "test"},
    )
    await call(client, "store_context", content="Grandma's pie needs sugar.", context_type="output")
    stored = await call(
        client,
        "store_iteration_result",
        iteration=3,
        summary="Tried to start the API; it crashed.",
        success=False,
        error="OperationalError: no such table: users",
        tool_calls=["bash"],
    )
    assert stored["current_iteration"] == 3
    assert stored["error_item_id"]
    found = await call(client, "get_relevant_context", query="API crashes: table users missing")
    ids = [hit["item"]["id"] for hit in found["items"]]
    assert stored["error_item_id"] in ids and skill["id"] in ids
    assert found["stats"]["tier"] == "semantic"
    assert found["stats"]["filtered_count"] >= 1  # the pie
    factors = {
        "semantic",
        "lexical",
        "neighbour",
        "match",
        "recency",
        "usefulness",
        "feedback",
        "type_match",
    }
    assert set(found["items"][0]["breakdown"]) == factors
    only_skills = await call(
        client, "get_relevant_context", query="API server start", context_types=["skill"]
    )
    assert [hit["item"]["id"] for hit in only_skills["items"]] == [skill["id"]]

    feedback = await call(client, "mark_useful", item_id=skill["id"], helpful=True, reason="ok")
    assert feedback["usefulness_score"] == pytest.approx(0.6)
    skills = await call(client, "get_skills", tags=["db"], min_usefulness=0.55)
    assert [s["id"] for s in skills["skills"]] == [skill["id"]]
    assert (await call(client, "get_skills", min_usefulness=0.9))["count"] == 0
    # min_score, the usefulness floor's former name here, still works (deprecated).
    old = await call(client, "get_skills", tags=["db"], min_score=0.55)
    assert [s["id"] for s in old["skills"]] == [skill["id"]]
    assert (await call(client, "get_skills", min_score=0.9))["count"] == 0
    both = await error_of(client, "get_skills", min_usefulness=0.9, min_score=0.55)
    assert "min_usefulness alone" in both
    old_name = tools["get_skills"].input_schema["properties"]["min_score"]
    assert old_name.get("deprecated") is True
    history = await call(client, "get_iteration_history", last_n=5)
    assert [i["iteration"] for i in history["iterations"]] == [3]

    # --- maintenance ----------------------------------------------------------------------
    reported: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total))

    dry = await client.call_tool(
        "summarize_old_context", {"older_than_iterations": 0, "dry_run": True}
    )
    assert not dry.is_error and dry.structured_content is not None
    assert dry.structured_content["dry_run"] is True
    # The skill and the pie (iteration 0) are older than 0 iterations; the error (3) is not.
    assert len(dry.structured_content["summarized"]) == 2
    pruned = await client.call_tool(
        "prune_low_value_context",
        {"min_usefulness": 0.3, "dry_run": False},
        progress_callback=on_progress,
    )
    assert pruned.structured_content is not None and pruned.structured_content["pruned"] == []
    summarized = await client.call_tool(
        "summarize_old_context", {"older_than_iterations": 0}, progress_callback=on_progress
    )
    assert summarized.structured_content is not None
    assert len(summarized.structured_content["summarized"]) == 2
    assert reported and reported[-1][0] == reported[-1][1]

    stats = await call(client, "get_context_stats")
    assert stats["items"] == 3 and stats["by_state"] == {"summarized": 2, "active": 1}
    assert stats["by_type"] == {"skill": 1, "output": 1, "error": 1}
    health = await call(client, "health_check")
    assert health["status"] == "healthy" and health["tier"] == "semantic"
    assert {"embedding", "storage", "scoring", "lifecycle"} <= set(health["actors"])
    # No language model configured: the inference actor is off by choice, not degraded.
    assert health["actors"]["inference"]["state"] == "not_configured"
    assert health["not_configured"] == ["inference"]
    assert health["model_id"] and health["size_bytes"] > 0

    # --- bad input: a readable tool error, nothing stored changes -------------------------
    message = await error_of(client, "get_relevant_context", query="x", max_items=99)
    assert "max_items" in message and "50" in message
    message = await error_of(client, "store_context", content="x", context_type="memo")
    assert "context_type" in message and "skill" in message
    message = await error_of(client, "store_context", content="   ", context_type="skill")
    assert "store_context" in message and "empty" in message
    message = await error_of(client, "mark_useful", item_id="nope", helpful=True)
    assert "no context item with id 'nope'" in message
    message = await error_of(client, "get_relevant_context")
    assert "query" in message and "required" in message.lower()
    assert (await call(client, "get_context_stats"))["items"] == 3

    # --- resources ----------------------------------------------------------------------
    listed = {str(r.uri) for r in (await client.list_resources()).resources}
    assert {"context://stats", "context://skills"} <= listed
    listing = await client.list_resource_templates()
    templates = {t.uri_template for t in listing.resource_templates}
    assert {"context://items/{id}", "context://iterations/{n}"} <= templates
    item = json.loads(_text(await client.read_resource(f"context://items/{skill['id']}")))
    assert item["id"] == skill["id"] and item["content_type"] == "skill"
    assert json.loads(_text(await client.read_resource("context://stats")))["items"] == 3
    assert json.loads(_text(await client.read_resource("context://skills")))["count"] == 1
    iteration = json.loads(_text(await client.read_resource("context://iterations/3")))
    assert iteration["error"] == "OperationalError: no such table: users"
    with pytest.raises(mcp.MCPError, match="no context item with id 'missing'"):
        await client.read_resource("context://items/missing")
    with pytest.raises(mcp.MCPError, match="no result stored for iteration 42"):
        await client.read_resource("context://iterations/42")

    # --- prompts ------------------------------------------------------------------------
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert "Search" in prompts
    assert [(a.name, a.required) for a in prompts["Search"].arguments or []] == [("query", True)]
    answer = await client.get_prompt("Search", {"query": "API server start"})
    (message_,) = answer.messages
    assert message_.role == "user"
    body = message_.content.text  # type: ignore[union-attr]
    assert body.startswith("<search-query>API server start</search-query>\n<search-results>\n")
    assert body.endswith(
        "</search-results>\nUse the above search results to answer the user's query below.\n"
        "<user-query>API server start</user-query>"
    )
    assert "### [SKILL]" in body
    with pytest.raises(mcp.MCPError, match="unknown prompt 'Nope'"):
        await client.get_prompt("Nope", {})
    with pytest.raises(mcp.MCPError, match="query"):
        await client.get_prompt("Search", {})

    # --- tool packs: same store, same process -------------------------------------------
    recorded = await call(
        client,
        "record_feedback",
        prompt_id="new",
        prompt_text="Summarize the failing test output in three bullet points.",
        outcome={"success": True, "quality_score": 0.9},
    )
    found = await call(client, "retrieve_prompts", query="summarize test failures")
    assert [r["prompt_id"] for r in found["results"]] == [recorded["prompt_id"]]
    captured = await call(
        client,
        "capture_learning",
        title="Migrations before the API",
        problem="The API crashed: no such table users.",
        solution="Run the database migrations before starting the server.",
        tags=["db"],
    )
    learned = await call(client, "query_learnings", search="server crashes on a missing table")
    assert [entry["id"] for entry in learned["learnings"]][:1] == [captured["id"]]
    assert (await call(client, "get_context_stats"))["items"] == 3  # packs keep their own tables

    # --- batch writes: all or nothing ---------------------------------------------------
    refused = await error_of(
        client,
        "store_contexts",
        items=[
            {"content": "Cache the wheel build between CI runs.", "context_type": "skill"},
            {"content": "  ", "context_type": "output"},
        ],
    )
    assert "empty" in refused
    assert (await call(client, "get_context_stats"))["items"] == 3
    message = await error_of(client, "store_contexts", items=[])
    assert "items" in message
    batch = await call(
        client,
        "store_contexts",
        items=[
            {"content": "Cache the wheel build between CI runs.", "context_type": "skill"},
            {"content": "flake8 E501 in cli.py line 80", "context_type": "error", "tags": ["lint"]},
        ],
    )
    assert batch["count"] == 2 and [i["content_type"] for i in batch["items"]] == ["skill", "error"]
    found = await call(client, "get_relevant_context", query="line too long lint error in cli.py")
    assert found["items"][0]["item"]["id"] == batch["items"][1]["id"]
    assert (await call(client, "get_context_stats"))["items"] == 5


def _text(result: Any) -> str:
    return str(result.contents[0].text)
