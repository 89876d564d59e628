"""The project-memory pack through the real MCP client: projects and cycles, sequential ids,
filters, hybrid search, project context, and refusals that write nothing."""

from __future__ import annotations

from typing import Any

import anyio
import mcp

from ralph_context.packs.toolkit import EngineHolder
from ralph_context.server.app import build_server
from tests.helpers import Loader, SettingsFactory
from tests.packs.conftest import no_model, serving
from tests.server.mcp_scenario import call, error_of

PACK_TOOLS = {
    "query_learnings",
    "get_learning",
    "list_tags",
    "get_project_context",
    "capture_learning",
    "capture_decision",
    "get_cycle_intent",
    "update_project_state",
}


async def make_project(client: mcp.Client, key: str = "shop", **extra: Any) -> dict[str, Any]:
    return await call(client, "update_project_state", project_id=key, name=key.title(), **extra)


async def learn(client: mcp.Client, title: str, **extra: Any) -> str:
    extra.setdefault("problem", f"Problem behind: {title}")
    extra.setdefault("solution", f"What fixed: {title}")
    answer = await call(client, "capture_learning", title=title, **extra)
    return str(answer["id"])


async def ids_of(client: mcp.Client, **arguments: Any) -> list[str]:
    answer = await call(client, "query_learnings", **arguments)
    assert answer["count"] == len(answer["learnings"])
    return [learning["id"] for learning in answer["learnings"]]


async def test_the_tools_are_listed_with_schemas_and_hints(client: mcp.Client) -> None:
    with anyio.fail_after(30):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= PACK_TOOLS
    for name in PACK_TOOLS:
        assert tools[name].output_schema is not None, name
        hints = tools[name].annotations
        assert hints is not None
        writes = name.startswith(("capture_", "update_"))
        assert hints.read_only_hint is (not writes), name
    limit = tools["query_learnings"].input_schema["properties"]["limit"]
    assert (limit["default"], limit["maximum"], limit["minimum"]) == (10, 50, 1)
    assert tools["capture_learning"].input_schema["required"] == ["title", "problem", "solution"]


async def test_a_project_is_created_only_with_a_name_and_a_new_cycle_completes_the_old(
    client: mcp.Client,
) -> None:
    with anyio.fail_after(60):
        message = await error_of(client, "update_project_state", project_id="shop", status="x")
        assert message == (
            "update_project_state: no project with id 'shop' "
            "(update_project_state with a name creates one)"
        )
        made = await make_project(
            client,
            repo_path="/repos/shop/",
            description="An online shop",
            tech_stack=["python", "fastapi"],
            active_cycle={"name": "Cycle 1", "intent": "Build the checkout flow"},
        )
        assert made["created"] is True and made["completed_cycles"] == []
        project = made["project"]
        assert (project["id"], project["name"], project["status"]) == ("shop", "Shop", "active")
        assert project["repo_path"] == "/repos/shop"  # compared without the trailing slash
        assert project["tech_stack"] == ["python", "fastapi"]
        assert made["active_cycle"]["id"] == "C-001"
        assert made["active_cycle"]["status"] == "active"

        second = await call(
            client,
            "update_project_state",
            project_id="shop",
            active_cycle={"name": "Cycle 2", "intent": "Take payments"},
        )
        assert second["created"] is False
        assert second["completed_cycles"] == ["C-001"]
        assert second["active_cycle"]["id"] == "C-002"
        assert second["project"]["description"] == "An online shop"  # untouched fields stay

        intent = await call(client, "get_cycle_intent", project_id="shop")
        assert (intent["cycle_id"], intent["intent"]) == ("C-002", "Take payments")
        old = await call(client, "get_cycle_intent", cycle_id="C-001")
        assert (old["status"], old["intent"]) == ("completed", "Build the checkout flow")

        paused = await call(
            client,
            "update_project_state",
            project_id="shop",
            status="paused",
            tech_stack={"backend": "fastapi", "db": ["postgres"]},
        )
        assert paused["project"]["status"] == "paused"
        assert paused["project"]["tech_stack"] == {"backend": "fastapi", "db": ["postgres"]}
        assert paused["active_cycle"]["id"] == "C-002"  # still the active one
        assert paused["completed_cycles"] == []

        await make_project(client, "blog")
        message = await error_of(client, "get_cycle_intent", project_id="blog")
        assert "project 'blog' has no active cycle" in message
        message = await error_of(client, "get_cycle_intent", project_id="shop", cycle_id="C-1")
        assert message == "get_cycle_intent: give either project_id or cycle_id (exactly one)"
        message = await error_of(client, "get_cycle_intent", cycle_id="C-404")
        assert message == "get_cycle_intent: no cycle with id 'C-404'"
        message = await error_of(client, "update_project_state", project_id="shop")
        assert "nothing to update for project 'shop'" in message

        # A repo path belongs to one project: refused before anything is written.
        message = await error_of(
            client,
            "update_project_state",
            project_id="blog",
            repo_path="/repos/shop",
            active_cycle={"name": "B1", "intent": "Write posts"},
        )
        assert message == (
            "update_project_state: repo_path '/repos/shop' already belongs to project 'shop'"
        )
        message = await error_of(client, "get_cycle_intent", project_id="blog")
        assert "no active cycle" in message  # the cycle was not started either
        context = await call(client, "get_project_context", repo_path="/repos/shop")
        assert context["project"]["id"] == "shop"


async def test_captures_get_the_next_ids_and_references_are_checked_first(
    client: mcp.Client,
) -> None:
    with anyio.fail_after(60):
        await make_project(client, active_cycle={"name": "Cycle 1", "intent": "Checkout"})
        await make_project(client, "blog", active_cycle={"name": "B1", "intent": "Posts"})
        first = await call(
            client,
            "capture_learning",
            title="  Pin the Stripe API version  ",
            problem="Webhooks changed shape after Stripe's upgrade.",
            solution="Set stripe.api_version explicitly.",
            tags=["payments", "stripe", "payments", " api "],
            project_id="shop",
            cycle_id="C-001",
            session_id="s-1",
        )
        assert first["id"] == "L-001" and first["embedded"] is True
        learning = first["learning"]
        assert learning["title"] == "Pin the Stripe API version"
        assert learning["tags"] == ["payments", "stripe", "api"]
        assert (learning["project_id"], learning["cycle_id"]) == ("shop", "C-001")
        # The cycle alone files the learning under the cycle's project.
        second = await learn(client, "Blog drafts need slugs", cycle_id="C-002")
        assert second == "L-002"
        assert (await call(client, "get_learning", id="L-002"))["project_id"] == "blog"
        assert await learn(client, "A lesson of no project") == "L-003"

        refusals = {
            "no project with id 'nope'": {"project_id": "nope"},
            "no cycle with id 'C-404'": {"cycle_id": "C-404"},
            "cycle 'C-002' belongs to project 'blog', not 'shop'": {
                "project_id": "shop",
                "cycle_id": "C-002",
            },
        }
        for expected, references in refusals.items():
            message = await error_of(
                client, "capture_learning", title="t", problem="p", solution="s", **references
            )
            assert message.startswith("capture_learning: " + expected), message
        assert await ids_of(client) == ["L-003", "L-002", "L-001"]

        decision = await call(
            client,
            "capture_decision",
            title="Use Postgres",
            decision="Postgres over SQLite for concurrent writes.",
            context="SQLite locked under load.",
            project_id="shop",
        )
        assert decision["id"] == "D-001"
        assert decision["decision"]["context"] == "SQLite locked under load."
        message = await error_of(
            client, "capture_decision", title="t", decision="d", project_id="ghost"
        )
        assert message.startswith("capture_decision: no project with id 'ghost'")
        plain = await call(client, "capture_decision", title="Tabs", decision="Use spaces.")
        assert (plain["id"], plain["decision"]["project_id"]) == ("D-002", None)


async def test_query_filters_by_any_tag_and_project_newest_first(client: mcp.Client) -> None:
    with anyio.fail_after(60):
        await make_project(client)
        await make_project(client, "blog")
        a = await learn(client, "Retry flaky HTTP calls", tags=["http", "retry"], project_id="shop")
        b = await learn(client, "Cache product pages", tags=["cache"], project_id="shop")
        c = await learn(client, "Escape HTML", tags=["security", "http"], project_id="blog")
        d = await learn(client, "Vacuum the database weekly", tags=["db"])

        assert await ids_of(client) == [d, c, b, a]
        assert await ids_of(client, limit=2) == [d, c]
        assert await ids_of(client, tags=["http"]) == [c, a]
        assert await ids_of(client, tags=["cache", "db"]) == [d, b]  # ANY of the tags
        assert await ids_of(client, project_id="shop") == [b, a]
        assert await ids_of(client, project_id="blog", tags=["http", "cache"]) == [c]
        # A quote in a filter value is data, not SQL.
        assert await ids_of(client, tags=["x' OR 1=1 --"]) == []

        empty = await call(client, "query_learnings", tags=["nothing-has-this"])
        assert (empty["count"], empty["learnings"], empty["mode"]) == (0, [], "recent")
        assert "list_tags" in empty["message"]
        message = await error_of(client, "query_learnings", project_id="ghost")
        assert message.startswith("query_learnings: no project with id 'ghost'")

        tags = await call(client, "list_tags")
        assert tags["tags"] == [
            {"tag": "http", "count": 2},
            {"tag": "cache", "count": 1},
            {"tag": "db", "count": 1},
            {"tag": "retry", "count": 1},
            {"tag": "security", "count": 1},
        ]
        assert tags["learnings"] == 4
        shop = await call(client, "list_tags", project_id="shop")
        assert [t["tag"] for t in shop["tags"]] == ["cache", "http", "retry"]
        assert shop["learnings"] == 2
        message = await error_of(client, "list_tags", project_id="ghost")
        assert "no project with id 'ghost'" in message


async def test_search_finds_by_meaning_and_by_exact_words(client: mcp.Client) -> None:
    with anyio.fail_after(60):
        await make_project(client)
        timeout = await learn(
            client,
            "Database connections exhausted under load",
            problem="The service hung because the connection pool ran dry at peak traffic.",
            solution="Raise the pool size and release connections in a finally block.",
            tags=["db"],
            project_id="shop",
        )
        code = await learn(
            client,
            "Mongo duplicate key E11000",
            problem="Inserts failed with E11000 on the email index.",
            solution="Upsert by email instead of insert.",
            tags=["db", "mongo"],
        )
        css = await learn(
            client,
            "Dark mode colours",
            problem="Text was unreadable in dark mode.",
            solution="Use CSS variables for the palette.",
            tags=["ui"],
            project_id="shop",
        )

        # A paraphrase sharing no key word with the learning: found by meaning.
        found = await call(
            client, "query_learnings", search="app freezes when too many SQL clients connect"
        )
        assert found["mode"] == "hybrid" and found["degraded_reason"] is None
        assert found["learnings"][0]["id"] == timeout
        assert css not in [hit["id"] for hit in found["learnings"]]
        scores = [hit["score"] for hit in found["learnings"]]
        assert scores == sorted(scores, reverse=True) and 0 < scores[0] <= 1
        # An error code: found by its words.
        coded = await call(client, "query_learnings", search="E11000")
        assert coded["learnings"][0]["id"] == code
        # Filters apply to search too.
        assert await ids_of(client, search="database problems", project_id="shop") == [timeout]
        assert await ids_of(client, search="duplicate key on insert", tags=["mongo"]) == [code]
        assert code not in await ids_of(client, search="duplicate key on insert", tags=["ui"])

        nothing = await call(client, "query_learnings", search="medieval falconry techniques")
        assert nothing["count"] == 0 and "list_tags" in nothing["message"]


async def test_project_context_has_the_active_cycle_and_five_recent_of_each(
    client: mcp.Client,
) -> None:
    with anyio.fail_after(90):
        await make_project(
            client,
            repo_path="/repos/shop",
            active_cycle={"name": "Cycle 1", "intent": "Checkout"},
        )
        await make_project(client, "blog")
        learned = [await learn(client, f"Shop lesson {n}", project_id="shop") for n in range(6)]
        await learn(client, "Blog lesson", project_id="blog")
        decided = []
        for n in range(6):
            made = await call(
                client, "capture_decision", title=f"D{n}", decision=f"Do {n}", project_id="shop"
            )
            decided.append(made["id"])

        by_id = await call(client, "get_project_context", project_id="shop")
        by_repo = await call(client, "get_project_context", repo_path="/repos/shop/")
        assert by_id == by_repo
        assert by_id["project"]["id"] == "shop"
        assert by_id["active_cycle"]["intent"] == "Checkout"
        assert [r["id"] for r in by_id["recent_learnings"]] == learned[::-1][:5]
        assert [r["id"] for r in by_id["recent_decisions"]] == decided[::-1][:5]

        blog = await call(client, "get_project_context", project_id="blog")
        assert blog["active_cycle"] is None and blog["recent_decisions"] == []
        assert [r["title"] for r in blog["recent_learnings"]] == ["Blog lesson"]

        for arguments in ({}, {"project_id": "shop", "repo_path": "/repos/shop"}):
            message = await error_of(client, "get_project_context", **arguments)
            assert message == (
                "get_project_context: give either project_id or repo_path (exactly one)"
            )
        message = await error_of(client, "get_project_context", repo_path="/repos/none")
        assert message.startswith("get_project_context: no project with repo_path '/repos/none'")


async def test_bad_input_is_refused_clearly_and_writes_nothing(client: mcp.Client) -> None:
    with anyio.fail_after(60):
        await make_project(client)
        kept = await learn(client, "The one stored learning", tags=["kept"], project_id="shop")

        message = await error_of(client, "get_learning", id="L-999")
        assert message == (
            "get_learning: no learning with id 'L-999' (query_learnings lists the stored ones)"
        )
        message = await error_of(client, "query_learnings", limit=51)
        assert "argument 'limit'" in message and "50" in message
        message = await error_of(client, "query_learnings", limit=0)
        assert "argument 'limit'" in message and "1" in message
        message = await error_of(client, "query_learnings", limit="many")
        assert "argument 'limit'" in message and "integer" in message
        message = await error_of(client, "query_learnings", tags="kept")
        assert "argument 'tags'" in message and "list" in message
        message = await error_of(client, "query_learnings", search="   ")
        assert message == ("query_learnings: search must not be empty (omit it to list the newest)")

        refused_writes: list[tuple[str, dict[str, Any], str]] = [
            ("capture_learning", {"title": " ", "problem": "p", "solution": "s"}, "title must"),
            ("capture_learning", {"title": "t", "problem": "", "solution": "s"}, "problem must"),
            ("capture_learning", {"title": 5, "problem": "p", "solution": "s"}, "'title'"),
            ("capture_learning", {"problem": "p", "solution": "s"}, "required"),
            (
                "capture_learning",
                {"title": "t", "problem": "p", "solution": "s", "tags": ["ok", " "]},
                "tags must be non-empty",
            ),
            (
                "capture_learning",
                {"title": "x" * 301, "problem": "p", "solution": "s"},
                "title is 301 characters; at most 300",
            ),
            ("capture_decision", {"title": "t", "decision": "  "}, "decision must not be empty"),
            ("update_project_state", {"project_id": "", "name": "X"}, "project_id must not"),
            (
                "update_project_state",
                {"project_id": "new", "name": "New", "active_cycle": {"name": "c"}},
                "active_cycle.intent",
            ),
            (
                "update_project_state",
                {"project_id": "new", "name": "New", "tech_stack": "python"},
                "tech_stack",
            ),
        ]
        for tool, arguments, expected in refused_writes:
            message = await error_of(client, tool, **arguments)
            assert message.startswith(f"{tool}: ") and expected in message, message

        assert await ids_of(client) == [kept]
        assert (await call(client, "list_tags"))["tags"] == [{"tag": "kept", "count": 1}]
        message = await error_of(client, "get_project_context", project_id="new")
        assert "no project with id 'new'" in message
        assert (await call(client, "capture_decision", title="t", decision="d"))["id"] == "D-001"


async def test_without_the_model_learnings_are_kept_and_found_by_words(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings(lifecycle={"auto_run": False}, packs=["project"])
    with anyio.fail_after(60):
        async with serving(settings, no_model) as running:
            client = running.client
            captured = await call(
                client,
                "capture_learning",
                title="Rotate the JWT signing key",
                problem="Tokens stayed valid after a leak.",
                solution="Rotate keys monthly and keep a kid header.",
                tags=["auth"],
            )
            assert (captured["id"], captured["embedded"]) == ("L-001", False)
            found = await call(client, "query_learnings", search="JWT key rotation")
            assert found["mode"] == "text"
            assert "embedding model unavailable" in found["degraded_reason"]
            assert [hit["id"] for hit in found["learnings"]] == ["L-001"]
        # The same store with the model: the old learning competes on its words alone.
        async with serving(settings, shared_model) as running:
            client = running.client
            second = await learn(client, "Cache invalidation on deploy", tags=["cache"])
            assert second == "L-002"
            found = await call(client, "query_learnings", search="JWT signing key")
            assert found["mode"] == "hybrid"
            assert [hit["id"] for hit in found["learnings"]] == ["L-001"]


async def test_a_pack_listed_but_switched_off_by_its_own_key_registers_no_tools(
    make_settings: SettingsFactory,
) -> None:
    """``project.enabled: false`` (or its variable) wins over the list that names it."""
    settings = make_settings(
        packs={"enabled": ["project", "prompts"], "project": {"enabled": False}}
    )
    server = build_server(EngineHolder(settings))
    with anyio.fail_after(30):
        async with mcp.Client(server) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
    assert not names & PACK_TOOLS
    assert {"get_relevant_context", "retrieve_prompts"} <= names
