"""The prompt hook pushes only what passes the push gate (``retrieval/gate.py``): over a
loop's memory of notes, an everyday prompt no note answers reaches the agent with no memory
at all, though a pull (the search) still finds the store's closest items for it; a related
prompt gets its note; with ``retrieval.push_gate: off`` the hook pushes what the search
returns, as before."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ralph_context.config.agents import AgentsSettings
from ralph_context.engine import Engine, NewItem
from ralph_context.server.agents.events import AgentEvents
from tests.agents.payloads import prompt
from tests.helpers import Loader, SettingsFactory

pytestmark = pytest.mark.model

NOTES = (
    (
        "task",
        "Task: build the orders API (FastAPI + PostgreSQL). Endpoints: POST /orders, "
        "GET /orders/{id}, POST /orders/{id}/cancel. Auth by JWT bearer tokens.",
    ),
    (
        "file",
        "app/db/session.py: owns the async SQLAlchemy engine and the sessionmaker; "
        "get_session() is the dependency every route uses. pool_size=5, max_overflow=10.",
    ),
    (
        "skill",
        "When adding a column, write an Alembic revision with `alembic revision "
        "--autogenerate` and read the generated file: autogenerate misses server defaults.",
    ),
    (
        "error",
        "`sqlalchemy.exc.MissingGreenlet: greenlet_spawn has not been called` in "
        "app/routes/orders.py when serialising order.items. Fixed with selectinload(Order.items).",
    ),
    (
        "error",
        "`jwt.exceptions.InvalidAudienceError: Audience doesn't match` on every request "
        "in staging: tokens carry aud='orders-api'. Fixed by passing "
        "audience=settings.jwt_audience.",
    ),
    (
        "error",
        "`kombu.exceptions.OperationalError: Error 111 connecting to localhost:6379. "
        "Connection refused.` under docker compose: the Redis host is `redis`. Fixed by setting "
        "CELERY_BROKER_URL=redis://redis:6379/0 in docker-compose.yml.",
    ),
    (
        "skill",
        "To run one test file fast: `pytest tests/test_webhooks.py -q -p no:cacheprovider "
        "--no-cov`; the coverage plugin adds ~6 s to every run.",
    ),
    (
        "iteration",
        "Decision: cursor pagination (an opaque base64 cursor of created_at,id) "
        "instead of offset/limit: offset scans get slow past ~100k orders.",
    ),
    (
        "error",
        "Webhook signature check failed for every event in staging: we computed the HMAC "
        "over the re-serialised JSON body, PayBridge signs the raw bytes. Fixed by reading "
        "`await request.body()` before parsing.",
    ),
    (
        "output",
        "`mypy app/`: Success: no issues found in 31 source files. `ruff check`: All "
        "checks passed!",
    ),
)
EVERYDAY = (
    "rename the variable tmp to order_total in this function",
    "write a haiku about autumn",
    "thanks, that's all for today",
    "what's the difference between a list and a tuple in Python?",
    "add a CONTRIBUTING.md describing our code review etiquette",
)
RELATED = "celery can't connect to redis when I run docker compose, connection refused on 6379"
ANSWER = "CELERY_BROKER_URL=redis://redis:6379/0"


async def _asked(engine: Engine, project: Path, prompts: tuple[str, ...]) -> list[tuple[str, str]]:
    async with anyio.create_task_group() as group:
        events = AgentEvents(engine, AgentsSettings(), group)
        answers = [
            await events.handle("claude", prompt(project, text, f"s{n}"))
            for n, text in enumerate(prompts)
        ]
        group.cancel_scope.cancel()
    return answers


async def test_an_everyday_prompt_gets_no_memory_and_a_related_one_gets_its_note(
    make_settings: SettingsFactory, shared_model: Loader, project: Path
) -> None:
    async with Engine(make_settings(), model_loader=shared_model) as engine:
        await engine.store_many([NewItem(text, kind) for kind, text in NOTES])
        *everyday, (related, _) = await _asked(engine, project, (*EVERYDAY, RELATED))
        # A pull still answers with the store's closest items: the gate held them back.
        pulled = [len((await engine.search(text)).items) for text in EVERYDAY]
    for context, action in everyday:
        assert context == "", context
        assert action.startswith("prompt: 0 items") and "under the push gate" in action
    assert sum(pulled) > 0
    assert ANSWER in related and "Relevant to this prompt" in related
    assert "haiku" not in related and "cursor pagination" not in related


async def test_with_the_gate_off_the_hook_pushes_what_the_search_returns(
    make_settings: SettingsFactory, shared_model: Loader, project: Path
) -> None:
    settings = make_settings(retrieval={"push_gate": "off"})
    async with Engine(settings, model_loader=shared_model) as engine:
        await engine.store_many([NewItem(text, kind) for kind, text in NOTES])
        answers = await _asked(engine, project, EVERYDAY)
        found = [(await engine.search(text, max_tokens=1200)).items for text in EVERYDAY]
    for (context, action), items in zip(answers, found, strict=True):
        assert action.startswith(f"prompt: {len(items)} items (0 given before, 0 under")
        assert bool(context) == bool(items)
    assert any(items for items in found)
