"""Bad input gets a typed, readable error and leaves what is stored untouched."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
    UnknownContextType,
)
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
