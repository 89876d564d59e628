"""Bad input gets a typed, readable error and leaves what is stored untouched."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from ralph_context import (
    ContentTooLarge,
    EmptyContent,
    Engine,
    InvalidEncoding,
    InvalidInput,
    InvalidMetadata,
    InvalidScore,
    InvalidTags,
    IterationResult,
    NewItem,
    StoreError,
    Tier,
    UnknownContextType,
)
from ralph_context.models import JsonValue
from tests.helpers import Loader, SettingsFactory

Call = Callable[[Engine], Awaitable[Any]]

CASES: list[tuple[str, Call, type[InvalidInput], str]] = [
    ("empty", lambda e: e.store("", "output"), EmptyContent, "empty"),
    ("whitespace", lambda e: e.store(" \n\t ", "output"), EmptyContent, "whitespace"),
    ("too big", lambda e: e.store("x" * 2_001, "output"), ContentTooLarge, "2,001 bytes"),
    ("unknown type", lambda e: e.store("ok", "memo"), UnknownContextType, "allowed: task"),
    (
        "tag not a string",
        lambda e: e.store("ok", "output", tags=[3]),  # type: ignore[list-item]
        InvalidTags,
        "tags[0]",
    ),
    ("tags a string", lambda e: e.store("ok", "output", tags="deps"), InvalidTags, "list"),
    ("empty tag", lambda e: e.store("ok", "output", tags=["  "]), InvalidTags, "empty"),
    (
        "non-utf8 bytes",
        lambda e: e.store(b"caf\xe9 latte", "output"),
        InvalidEncoding,
        "not valid UTF-8",
    ),
    (
        "lone surrogate",
        lambda e: e.store("bad \ud800 text", "output"),
        InvalidEncoding,
        "not valid Unicode",
    ),
    (
        "nan in metadata",
        lambda e: e.store("ok", "output", metadata={"score": float("nan")}),
        InvalidMetadata,
        "finite",
    ),
    ("nan min_score", lambda e: e.search("q", min_score=float("nan")), InvalidScore, "nan"),
    ("inf min_score", lambda e: e.search("q", min_score=float("inf")), InvalidScore, "inf"),
    ("min_score > 1", lambda e: e.search("q", min_score=1.5), InvalidScore, "between 0 and 1"),
    ("max_items 0", lambda e: e.search("q", max_items=0), InvalidInput, "between 1 and 50"),
    ("max_items 51", lambda e: e.search("q", max_items=51), InvalidInput, "between 1 and 50"),
    ("empty query", lambda e: e.search("   "), EmptyContent, "query"),
    (
        "far-future iteration",
        lambda e: e.record_iteration(IterationResult(iteration=10**9, success=True, summary="x")),
        InvalidInput,
        "lifecycle.max_iteration_step",
    ),
    (
        "far-future item",
        lambda e: e.store("ok", "output", iteration=1_001),
        InvalidInput,
        "it must be at most 1000 (lifecycle.max_iteration_step",
    ),
    (
        "far-future item in a batch",
        lambda e: e.store_many([NewItem("ok", "output"), NewItem("ok", "output", iteration=10**9)]),
        InvalidInput,
        "lifecycle.max_iteration_step",
    ),
    (
        "source with a control character",
        lambda e: e.store("ok", "output", source="conv\x001"),
        InvalidInput,
        "source has a control character",
    ),
    ("source too long", lambda e: e.store("ok", "output", source="s" * 201), InvalidInput, "200"),
    (
        "metadata integer past 2**53",
        lambda e: e.store("ok", "output", metadata={"a": {"b": [0, 1, 2**64]}}),
        InvalidMetadata,
        "metadata.a.b[2] is a 65-bit integer; integers must be within ±9,007,199,254,740,991",
    ),
    (
        "metadata integer past the doubles",
        lambda e: e.store("ok", "output", metadata={"n": [10**400]}),
        InvalidMetadata,
        "metadata.n[0] is a 1329-bit integer",
    ),
    (
        "metadata negative integer past 2**53",
        lambda e: e.store("ok", "output", metadata={"odd key": -(10**50 - 1)}),
        InvalidMetadata,
        "metadata['odd key'] is a 167-bit integer",
    ),
    (
        "metadata infinity",
        lambda e: e.store("ok", "output", metadata={"x": {"y": float("-inf")}}),
        InvalidMetadata,
        "metadata.x.y is -inf; numbers must be finite",
    ),
    (
        "metadata too large",
        lambda e: e.store("ok", "output", metadata={"blob": "y" * 20_000}),
        InvalidMetadata,
        "the limit is 16,384",
    ),
    (
        "metadata too deep",
        lambda e: e.store(
            "ok",
            "output",
            metadata={"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}},
        ),
        InvalidMetadata,
        "nested more than 8",
    ),
    (
        "metadata too many keys",
        lambda e: e.store("ok", "output", metadata={f"k{n}": [{"x": n}] for n in range(200)}),
        InvalidMetadata,
        "more than 256 keys",
    ),
    (
        "type filter string",
        lambda e: e.search("q", context_types="error"),
        UnknownContextType,
        "must be a list",
    ),
]


@pytest.mark.parametrize(("case", "call", "error", "message"), CASES, ids=[c[0] for c in CASES])
async def test_bad_input_is_rejected_and_nothing_stored_changes(
    make_settings: SettingsFactory,
    shared_model: Loader,
    case: str,
    call: Call,
    error: type[InvalidInput],
    message: str,
) -> None:
    settings = make_settings(storage={"max_content_bytes": 2_000})
    with anyio.fail_after(30):
        async with Engine(settings, model_loader=shared_model) as engine:
            kept = await engine.store("Kept item: the CI cache key includes the lockfile", "skill")
            before = await engine.stats()
            with pytest.raises(error) as raised:
                await call(engine)
            after = await engine.stats()
            still = await engine.get(kept.id)
    assert message in str(raised.value)
    assert after.items == before.items == 1
    assert after.table_version == before.table_version
    assert still == kept


async def test_a_value_the_store_cannot_hold_is_refused_and_the_actor_keeps_serving(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """A number past its column's range that got by validation (here: built without it)
    fails that one request; five of them once took the storage actor down for good."""
    with anyio.fail_after(60):
        async with Engine(make_settings(), model_loader=shared_model) as engine:
            storage = engine._require_storage()
            for _ in range(6):
                with pytest.raises(StoreError, match="rejected"):
                    await storage.add_iteration(
                        IterationResult.model_construct(
                            iteration=2**63,
                            success=True,
                            summary="x",
                            duration_ms=0,
                            tokens_used=0,
                            cost=0.0,
                            tool_calls=(),
                            artifacts=(),
                            error=None,
                            created_at=datetime.now(UTC),
                        )
                    )
            await engine.record_iteration(IterationResult(iteration=1, success=True, summary="ok"))
            health = engine.health()
            history = await engine.recent_iterations(5)
    assert health.tier is Tier.SEMANTIC
    assert health.actors["storage"].serving
    assert health.actors["storage"].restarts == 0
    assert [r.iteration for r in history] == [1]


async def test_metadata_numbers_at_the_limits_come_back_exactly(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """What is not refused is kept as given: the largest exact integers, the largest and
    smallest doubles, through the store and a reopen."""
    numbers: dict[str, JsonValue] = {
        "top": 2**53 - 1,
        "bottom": -(2**53 - 1),
        "big": 1.7976931348623157e308,
        "tiny": 5e-324,
        "deep": {"list": [0, -0.5, 2**31]},
    }
    settings = make_settings()
    with anyio.fail_after(30):
        async with Engine(settings, model_loader=shared_model) as engine:
            stored = await engine.store("numbers at the limits", "output", metadata=numbers)
        async with Engine(settings, model_loader=shared_model) as engine:
            read = await engine.get(stored.id)
    assert read.metadata == {**numbers, "recorded_by": "python"}
    assert isinstance(read.metadata["top"], int)
